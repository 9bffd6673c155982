"""Exact aggregated requests (the vectors check only the GPU's sign; these check values)."""

from decimal import Decimal
from typing import Any

import pytest

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
