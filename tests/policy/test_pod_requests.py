"""Exact aggregated requests (the vectors check only the GPU's sign; these check values)."""

import decimal
import importlib
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import policy


def container(name: str, restart_policy: str | None = None, **requests: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "resources": {"requests": dict(requests)}}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


def test_sidecars_and_init_containers_follow_the_kep_753_formula() -> None:
    """containers: cpu 1 + sidecar 1 = 2; init need after the sidecar = 3 + 1 = 4 -> max 4."""
    pod = {
        "spec": {
            "containers": [container("app", cpu="1", memory="1Gi")],
            "initContainers": [
                container("setup", cpu="2"),
                container("proxy", "Always", cpu="1", memory="64Mi"),
                container("migrate", cpu="3", memory="2Gi"),
            ],
        }
    }
    assert policy.pod_requests(pod) == {
        "cpu": Decimal(4),
        "memory": Decimal(2 * 1024**3 + 64 * 1024**2),
    }


def test_pod_level_requests_replace_only_supported_resources_then_overhead_is_added() -> None:
    pod = {
        "spec": {
            "containers": [container("app", cpu="1", memory="1Gi", **{"nvidia.com/gpu": "2"})],
            "resources": {"requests": {"cpu": "4", "hugepages-1Gi": "2Gi", "nvidia.com/gpu": "8"}},
            "overhead": {"cpu": "250m", "memory": "120Mi"},
        }
    }
    assert policy.pod_requests(pod) == {
        "cpu": Decimal("4.25"),
        "memory": Decimal(1024**3 + 120 * 1024**2),
        "hugepages-1Gi": Decimal(2 * 1024**3),
        "nvidia.com/gpu": Decimal(2),
    }


def test_sums_stay_exact_far_beyond_float_precision() -> None:
    pod = {"spec": {"containers": [container("a", cpu="1e30"), container("b", cpu="1n")]}}
    assert policy.pod_requests(pod)["cpu"] == Decimal("1000000000000000000000000000000.000000001")


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        ("a pod", "pod must be an object"),
        ({"spec": []}, "pod.spec must be an object"),
        ({"spec": {"containers": ["app"]}}, r"spec.containers\[0\] must be an object"),
        ({"spec": {"containers": [{"resources": []}]}}, r"spec.containers\[0\].resources must be an object"),
        ({"spec": {"initContainers": {}}}, "spec.initContainers must be a list"),
        ({"spec": {"overhead": "1"}}, "spec.overhead must be an object"),
        (
            {"spec": {"containers": [container("a", cpu="x")]}},
            r"spec.containers\[0\].resources.requests\['cpu'\]: quantity 'x' is not valid",
        ),
    ],
)
def test_malformed_pods_name_the_field(pod: object, message: str) -> None:
    with pytest.raises(policy.PolicyError, match=message):
        policy.pod_requests(pod)  # type: ignore[arg-type]


def literal_requests(init_containers: list[dict[str, Any]]) -> dict[str, Decimal]:
    """Kubernetes' formula for a pod of init containers alone, written out: sidecars summed, each
    init container's whole need (its own requests plus every sidecar before it; a sidecar's, every
    sidecar up to it), then per resource the larger of the sum and every need."""
    total: dict[str, Decimal] = {}
    sidecars: dict[str, Decimal] = {}
    peak: dict[str, Decimal] = {}
    for spec in init_containers:
        own = {name: policy.parse_quantity(value) for name, value in spec["resources"]["requests"].items()}
        if spec.get("restartPolicy") == "Always":
            for name, quantity in own.items():
                total[name] = total.get(name, Decimal(0)) + quantity
                sidecars[name] = sidecars.get(name, Decimal(0)) + quantity
            need = dict(sidecars)
        else:
            need = dict(own)
            for name, quantity in sidecars.items():
                need[name] = need.get(name, Decimal(0)) + quantity
        for name, quantity in need.items():
            if name not in peak or quantity > peak[name]:
                peak[name] = quantity
    for name, quantity in peak.items():
        if name not in total or quantity > total[name]:
            total[name] = quantity
    return total


INIT_CONTAINERS = st.lists(
    st.builds(
        lambda restart, requests: container("c", restart, **requests),
        st.sampled_from([None, "Always", "OnFailure"]),
        st.dictionaries(
            st.sampled_from(["cpu", "memory", "a", "b", "c"]), st.sampled_from(["1", "2", "5", "-3", "0"])
        ),
    ),
    max_size=8,
)


@given(INIT_CONTAINERS)
def test_init_containers_peak_as_the_formula_written_out(init_containers: list[dict[str, Any]]) -> None:
    """Sidecars before and after ordinary init containers, shared and separate resources,
    negative requests (the API server validates only after admission): the same values and the
    same order of resources as computing every container's whole need."""
    requests = policy.pod_requests({"spec": {"initContainers": init_containers}})
    expected = literal_requests(init_containers)
    assert list(requests.items()) == list(expected.items())


def test_the_work_grows_with_the_pod_not_with_its_square(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of 2,000 sidecars with a resource of its own, then 2,000 init containers each with
    another: the formula written out adds every sidecar to every later container's need (4
    million additions); the rule adds each container's own resources once."""
    size = 2_000
    init = [container(f"s{i}", "Always", **{f"example.com/s{i}": "1"}) for i in range(size)]
    init += [container(f"i{i}", **{f"example.com/i{i}": "1"}) for i in range(size)]
    module = importlib.import_module("policy.pod_requests")
    exact: decimal.Context = module.EXACT
    additions = 0

    class CountingContext:
        """The exact context, counting its additions."""

        def add(self, left: Decimal, right: Decimal) -> Decimal:
            nonlocal additions
            additions += 1
            return exact.add(left, right)

    monkeypatch.setattr(module, "EXACT", CountingContext())
    requests = policy.pod_requests({"spec": {"initContainers": init}})
    assert len(requests) == 2 * size
    assert additions <= 2 * size
