"""Same-zone jobs: the shared vectors (pod API and zone planning), settings and the pod-affinity patch."""

import copy
from typing import Any

import jsonpatch
import pytest

from policy import PolicyError
from policy.job_identity import JOB_SOURCES
from policy.job_zone import (
    DEFAULT_JOB_ZONE_SETTINGS,
    JOB_LABEL,
    SIZE_NOT_ON_POD,
    ZONE_LABEL,
    JobZoneSettings,
    ZoneJob,
    ZonePlan,
    declared_job,
    is_member,
    job_from_pod,
    plan_zone,
)
from policy.job_zone_affinity import (
    OWN_POD_AFFINITY_CONFLICT,
    REQUIRED_POD_TERMS_FIELD,
    combined_affinity_patch,
    own_required_pod_affinity,
    zone_affinity_patch,
    zone_affinity_term,
)
from policy.node_affinity import node_affinity_patch
from policy.owner_job import INVALID_COMPLETIONS, SIZE_FROM_COMPLETIONS, OwnerJobs
from policy.requirement import MISSING_POD
from tests.vectors import load_file

FILE = "zone_cases.json"
DOCUMENT = load_file(FILE)
POD_CASES: list[dict[str, Any]] = DOCUMENT["pods"]
PLAN_CASES: list[dict[str, Any]] = DOCUMENT["plans"]
MEMBER_CASES: list[dict[str, Any]] = DOCUMENT["members"]


def settings_of(case: dict[str, Any]) -> JobZoneSettings:
    return JobZoneSettings(**{**DOCUMENT["settings"], **case.get("settings", {})})


def owner_jobs_of(case: dict[str, Any]) -> OwnerJobs:
    """The case's Jobs as the lookup an Indexed Job's size is read through."""
    jobs = {(job["metadata"]["namespace"], job["metadata"]["name"]): job for job in case.get("jobs", ())}
    return lambda namespace, name: jobs.get((namespace, name))


def test_vector_file_covers_each_outcome() -> None:
    for cases in (POD_CASES, PLAN_CASES, MEMBER_CASES):
        names = [case["name"] for case in cases]
        assert len(names) == len(set(names)), "case names must be unique"
    assert {next(iter(case["expect"])) for case in POD_CASES} == {"job", "error", "decode_error"}
    sources = {case["expect"]["job"]["source"] for case in POD_CASES if case["expect"].get("job")}
    assert sources == set(JOB_SOURCES), "every identity source has a case"
    assert {case["expect"]["member"] for case in MEMBER_CASES} == {True, False}
    assert {next(iter(case["expect"])) for case in PLAN_CASES} == {"zone", "message"}
    assert settings_of({}) == DEFAULT_JOB_ZONE_SETTINGS


@pytest.mark.parametrize("case", POD_CASES, ids=lambda case: case["name"])
def test_pod_case(case: dict[str, Any]) -> None:
    settings = settings_of(case)
    expect = case["expect"]
    if "job" not in expect:
        with pytest.raises(PolicyError) as raised:
            job_from_pod(case["pod"], settings, owner_jobs_of(case))
        if "error" in expect:
            assert str(raised.value) == expect["error"]
        return
    want = None if expect["job"] is None else zone_job(expect["job"])
    assert job_from_pod(case["pod"], settings, owner_jobs_of(case)) == want


def zone_job(fields: dict[str, Any]) -> ZoneJob:
    """A vector's expected job: ``match_labels`` is a JSON object there, sorted pairs in ZoneJob."""
    return ZoneJob(**{**fields, "match_labels": tuple(sorted(fields["match_labels"].items()))})


@pytest.mark.parametrize("case", MEMBER_CASES, ids=lambda case: case["name"])
def test_member_case(case: dict[str, Any]) -> None:
    job = job_from_pod(case["pod"])
    assert job is not None
    namespace = case["pod"]["metadata"]["namespace"]
    assert is_member(job, namespace, case["other"]) is case["expect"]["member"]
    assert is_member(job, namespace, case["pod"]), "a pod is a member of its own job"


@pytest.mark.parametrize("case", PLAN_CASES, ids=lambda case: case["name"])
def test_plan_case(case: dict[str, Any]) -> None:
    plan = plan_zone(case["copies"], case["job_size"], frozenset(case["failed"]))
    expect = case["expect"]
    assert plan == ZonePlan(zone=expect.get("zone", ""), message=expect.get("message", ""))


def test_a_pod_that_cannot_be_read_is_no_member() -> None:
    job = job_from_pod(same_zone_pod())
    assert job is not None
    assert not is_member(job, "", None)
    assert not is_member(job, "", {"metadata": {"labels": ["not", "a", "map"]}})
    assert not is_member(job, "", {"metadata": {"labels": {JOB_LABEL: "llm"}, "annotations": {"x": 1}}})
    opted_in = {"training.example.com/zone-policy": "same-zone"}
    assert is_member(
        job, "", {"metadata": {"labels": {JOB_LABEL: "llm"}, "annotations": opted_in, "namespace": None}}
    )


def test_null_and_malformed_pods() -> None:
    with pytest.raises(PolicyError, match=f"^{MISSING_POD}$"):
        job_from_pod(None)
    with pytest.raises(PolicyError, match="pod must be an object"):
        job_from_pod(["not", "a", "pod"])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"job_label": ""}, "job_label must be a non-empty string"),
        ({"zone_label": 7}, "zone_label must be a non-empty string"),
        ({"max_job_size": 0}, "max_job_size must be an integer 1..1000000"),
        ({"max_job_size": 1_000_001}, "max_job_size must be an integer 1..1000000"),
        ({"max_job_size": True}, "max_job_size must be an integer 1..1000000"),
        ({"max_job_size": "8"}, "max_job_size must be an integer 1..1000000"),
    ],
)
def test_settings_refuse_bad_values(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JobZoneSettings(**overrides)


def same_zone_pod(affinity: object = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]
    }
    if affinity is not None:
        spec["affinity"] = affinity
    return {
        "metadata": {
            "name": "w",
            "labels": labels or {JOB_LABEL: "llm"},
            "annotations": {
                "training.example.com/zone-policy": "same-zone",
                "training.example.com/job-size": "8",
            },
        },
        "spec": spec,
    }


TERM = {"labelSelector": {"matchLabels": {JOB_LABEL: "llm"}}, "topologyKey": ZONE_LABEL}
OTHER_TERM = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}
NODE_AFFINITY: dict[str, Any] = {
    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": []}]}
}


@pytest.mark.parametrize(
    ("affinity", "want"),
    [
        (None, {"podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM]}}),
        (
            {"nodeAffinity": NODE_AFFINITY},
            {"nodeAffinity": NODE_AFFINITY, "podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM]}},
        ),
        ({"podAffinity": {}}, {"podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM]}}),
        (
            {"podAffinity": {REQUIRED_POD_TERMS_FIELD: []}},
            {"podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM]}},
        ),
        (
            {"podAntiAffinity": {REQUIRED_POD_TERMS_FIELD: [OTHER_TERM]}},
            {
                "podAntiAffinity": {REQUIRED_POD_TERMS_FIELD: [OTHER_TERM]},
                "podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM]},
            },
        ),
    ],
)
def test_zone_affinity_patch_adds_the_term_once(affinity: object, want: dict[str, Any]) -> None:
    pod = same_zone_pod(affinity)
    before = copy.deepcopy(pod)
    patch = zone_affinity_patch(pod)
    assert [operation["op"] for operation in patch] == ["add"]
    assert pod == before, "the pod given is not modified"
    patched = jsonpatch.apply_patch(pod, patch)
    assert patched["spec"]["affinity"] == want
    assert zone_affinity_patch(patched) == [], "a second call (reinvocation) adds nothing"


@pytest.mark.parametrize(
    "pod_affinity",
    [
        {REQUIRED_POD_TERMS_FIELD: [OTHER_TERM]},
        {REQUIRED_POD_TERMS_FIELD: [OTHER_TERM], "preferredDuringSchedulingIgnoredDuringExecution": []},
    ],
)
def test_a_pod_with_its_own_required_pod_affinity_gets_no_term_beside_it(
    pod_affinity: dict[str, Any],
) -> None:
    """kube-scheduler counts an existing pod for a pod's required terms only if it matches all of
    them (InterPodAffinity's podMatchesAllAffinityTerms), and lets a first pod through only if it
    matches all its own: the cache pods carry no job label and the members no cache label, so with
    both terms no pod would ever match. Plugin mode adds nothing; the extender modes refuse."""
    pod = same_zone_pod({"podAffinity": pod_affinity})
    assert own_required_pod_affinity(pod)
    assert zone_affinity_patch(pod, keeper="plugin") == []
    with pytest.raises(PolicyError) as refused:
        zone_affinity_patch(pod, keeper="affinity")
    assert str(refused.value) == OWN_POD_AFFINITY_CONFLICT
    assert "schedulerMode: plugin" in OWN_POD_AFFINITY_CONFLICT


def test_the_jobs_own_term_and_anti_affinity_are_not_a_pods_own_affinity() -> None:
    assert not own_required_pod_affinity(same_zone_pod({"podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM]}}))
    anti = same_zone_pod({"podAntiAffinity": {REQUIRED_POD_TERMS_FIELD: [OTHER_TERM]}})
    assert not own_required_pod_affinity(anti)
    assert not own_required_pod_affinity(same_zone_pod(None))
    with_both = same_zone_pod({"podAffinity": {REQUIRED_POD_TERMS_FIELD: [TERM, OTHER_TERM]}})
    assert own_required_pod_affinity(with_both)
    assert zone_affinity_patch(with_both) == [], "a pod already carrying the term is left as it is"


@pytest.mark.parametrize(
    ("labels", "selector"),
    [
        ({"scheduling.x-k8s.io/pod-group": "pg", JOB_LABEL: "llm"}, {JOB_LABEL: "llm"}),
        ({"scheduling.x-k8s.io/pod-group": "pg"}, {"scheduling.x-k8s.io/pod-group": "pg"}),
        ({"jobset.sigs.k8s.io/jobset-name": "train"}, {"jobset.sigs.k8s.io/jobset-name": "train"}),
        (
            {"leaderworkerset.sigs.k8s.io/name": "llama", "leaderworkerset.sigs.k8s.io/group-index": "3"},
            {"leaderworkerset.sigs.k8s.io/name": "llama", "leaderworkerset.sigs.k8s.io/group-index": "3"},
        ),
    ],
)
def test_zone_affinity_term_selects_by_the_labels_that_identify_the_job(
    labels: dict[str, str], selector: dict[str, str]
) -> None:
    pod = same_zone_pod(None, **labels)
    job = job_from_pod(pod)
    assert job is not None
    assert zone_affinity_term(job) == {"labelSelector": {"matchLabels": selector}, "topologyKey": ZONE_LABEL}
    (operation,) = zone_affinity_patch(pod)
    assert operation["value"]["podAffinity"][REQUIRED_POD_TERMS_FIELD] == [zone_affinity_term(job)]


def test_a_leaderworkerset_leader_waits_for_its_group_index() -> None:
    """LeaderWorkerSet's own webhook gives a leader its group index, possibly after this webhook
    ran: the pod gets nothing yet (the API server calls the webhook again once it is labelled)."""
    leader = same_zone_pod(None, **{"leaderworkerset.sigs.k8s.io/name": "llama"})
    assert zone_affinity_patch(leader) == []
    leader["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"] = "0"
    (operation,) = zone_affinity_patch(leader)
    term = operation["value"]["podAffinity"][REQUIRED_POD_TERMS_FIELD][0]
    assert term["labelSelector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/group-index"] == "0"


def test_zone_affinity_patch_leaves_other_pods_and_refuses_bad_ones() -> None:
    assert zone_affinity_patch({"metadata": {"labels": {JOB_LABEL: "llm"}}, "spec": {}}) == []
    bad = same_zone_pod()
    bad["metadata"]["annotations"]["training.example.com/job-size"] = "0"
    with pytest.raises(PolicyError, match="job size must be"):
        zone_affinity_patch(bad)
    with pytest.raises(
        PolicyError,
        match=r"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution must be a list",
    ):
        zone_affinity_patch(same_zone_pod({"podAffinity": {REQUIRED_POD_TERMS_FIELD: {"x": 1}}}))


@pytest.mark.parametrize("affinity", [None, {}, {"nodeAffinity": NODE_AFFINITY}, {"podAffinity": {}}])
def test_combined_patch_applies_both_rules(affinity: object) -> None:
    pod = same_zone_pod(affinity)
    pod["metadata"]["annotations"]["training.example.com/min-gpu-memory-mib"] = "40960"
    combined = combined_affinity_patch(node_affinity_patch(pod), zone_affinity_patch(pod))
    patched = jsonpatch.apply_patch(pod, combined)
    assert node_affinity_patch(patched) == [], "the memory rule is already in the patched pod"
    assert zone_affinity_patch(patched) == [], "the zone rule is already in the patched pod"


def test_combined_patch_with_one_rule_is_that_rule() -> None:
    operation = {"op": "add", "path": "/spec/affinity", "value": {"podAffinity": {}}}
    assert combined_affinity_patch([], [operation]) == [operation]
    assert combined_affinity_patch([operation], []) == [operation]


def _vector_case(name: str) -> dict[str, Any]:
    return next(case for case in POD_CASES if case["name"] == name)


def test_an_indexed_jobs_size_needs_its_job() -> None:
    """Without a way to read Jobs the size is not guessed; the pod's declared job says where it is."""
    case = _vector_case("indexed-job-size-from-its-job")
    with pytest.raises(PolicyError) as raised:
        job_from_pod(case["pod"])
    assert str(raised.value) == SIZE_NOT_ON_POD.format(
        owner="an Indexed Job", annotation=DEFAULT_JOB_ZONE_SETTINGS.job_size_annotation
    )
    declared = declared_job(case["pod"])
    assert declared is not None
    assert (declared.size, declared.size_from) == (0, SIZE_FROM_COMPLETIONS)


def test_a_job_whose_parallelism_is_no_integer_gives_no_size() -> None:
    case = _vector_case("indexed-job-size-from-its-job")
    job = {**case["jobs"][0], "spec": {"completions": 8, "parallelism": "8"}}
    with pytest.raises(PolicyError) as raised:
        job_from_pod(case["pod"], owner_jobs=lambda namespace, name: job)
    assert str(raised.value) == INVALID_COMPLETIONS.format(maximum=DEFAULT_JOB_ZONE_SETTINGS.max_job_size)
