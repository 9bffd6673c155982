"""The webhook and same-zone jobs: the pod affinity on the job label, and refused job annotations."""

import base64
from typing import Any

import jsonpatch
import orjson
import pytest

from extender_app.webhook.admission import JOB_REFUSAL_PREFIX, AdmissionSettings, review
from policy.job_identity import (
    JOB_COMPLETION_INDEX,
    JOB_CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    JOBSET_NAME_LABEL,
    LWS_GROUP_INDEX_LABEL,
    LWS_NAME_LABEL,
    LWS_SIZE_ANNOTATION,
)
from policy.job_zone import (
    INVALID_JOB_SIZE,
    INVALID_ZONE_POLICY,
    JOB_LABEL,
    JOB_SIZE_ANNOTATION,
    MISSING_JOB_NAME,
    SIZE_NOT_ON_POD,
    ZONE_LABEL,
    ZONE_POLICY_ANNOTATION,
    JobZoneSettings,
)
from policy.job_zone_affinity import OWN_POD_AFFINITY_CONFLICT
from policy.network_topology import (
    INVALID_TOPOLOGY,
    MAX_LAYERS,
    NETWORK_TOPOLOGY_ANNOTATION,
    TOPOLOGY_WITHOUT_ZONE_POLICY,
)
from testbed.admission_reviews import UID, admission_review, gpu_pod


def job_pod(
    size: str = "8", zone_policy: str = "same-zone", job: str | None = "llm", **kwargs: Any
) -> dict[str, Any]:
    pod = gpu_pod(**kwargs)
    pod["metadata"].setdefault("annotations", {}).update(
        {ZONE_POLICY_ANNOTATION: zone_policy, JOB_SIZE_ANNOTATION: size}
    )
    if job is not None:
        pod["metadata"]["labels"] = {JOB_LABEL: job}
    return pod


def topology_pod(choice: str, zone_policy: str | None = "same-zone") -> dict[str, Any]:
    """A member with the network topology annotation; without a zone policy, no job annotations at all."""
    pod = job_pod(zone_policy=zone_policy or "same-zone")
    annotations = pod["metadata"]["annotations"]
    annotations[NETWORK_TOPOLOGY_ANNOTATION] = choice
    if zone_policy is None:
        del annotations[ZONE_POLICY_ANNOTATION], annotations[JOB_SIZE_ANNOTATION]
    return pod


def test_a_valid_network_topology_choice_is_admitted_with_the_zone_affinity() -> None:
    for choice in ("preferred", "required:layer-1", f"required:layer-{MAX_LAYERS}"):
        result = patched(topology_pod(choice))
        assert result["spec"]["affinity"]["podAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ] == [TERM]


def answer(pod: dict[str, Any], settings: AdmissionSettings | None = None) -> dict[str, Any]:
    response: dict[str, Any] = orjson.loads(review(admission_review(pod), settings or AdmissionSettings()))[
        "response"
    ]
    assert response["uid"] == UID
    return response


def patched(pod: dict[str, Any]) -> dict[str, Any]:
    response = answer(pod)
    assert response["allowed"] is True
    result: dict[str, Any] = jsonpatch.apply_patch(pod, orjson.loads(base64.b64decode(response["patch"])))
    return result


TERM = {"labelSelector": {"matchLabels": {JOB_LABEL: "llm"}}, "topologyKey": ZONE_LABEL}


@pytest.mark.parametrize("annotation", [None, "40960"], ids=["zone-only", "zone-and-memory"])
def test_a_same_zone_pod_gets_the_zone_pod_affinity(annotation: str | None) -> None:
    pod = job_pod(annotation=annotation)
    result = patched(pod)
    affinity = result["spec"]["affinity"]
    assert affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [TERM]
    assert ("nodeAffinity" in affinity) == (annotation is not None), "the memory rule is applied as well"
    assert answer(result) == {"uid": UID, "allowed": True}, "reinvocation changes nothing"


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        (job_pod(size="0"), INVALID_JOB_SIZE.format(maximum=1024)),
        (job_pod(zone_policy="nearby"), INVALID_ZONE_POLICY),
        (job_pod(job=None), MISSING_JOB_NAME),
        (topology_pod("required:layer-9"), INVALID_TOPOLOGY.format(layers=MAX_LAYERS)),
        (topology_pod("preferred", zone_policy=None), TOPOLOGY_WITHOUT_ZONE_POLICY),
    ],
    ids=["job-size", "zone-policy", "no-job-name", "network-topology", "topology-without-zone-policy"],
)
def test_invalid_job_annotations_are_denied_with_the_named_reason(pod: dict[str, Any], reason: str) -> None:
    response = answer(pod)
    assert response["allowed"] is False
    assert response["status"]["message"] == f"{JOB_REFUSAL_PREFIX}: {reason}"
    warned = answer(pod, AdmissionSettings(invalid_annotation="warn"))
    assert warned == {"uid": UID, "allowed": True, "warnings": [f"{JOB_REFUSAL_PREFIX}: {reason}"]}


def test_the_job_size_bound_is_a_setting() -> None:
    settings = AdmissionSettings(job_zone=JobZoneSettings(max_job_size=2048))
    assert answer(job_pod(size="2000"), settings)["allowed"] is True
    assert answer(job_pod(size="2000"))["allowed"] is False


OWN_TERM = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": ZONE_LABEL}


def beside_the_cache(annotation: str | None = "40960") -> dict[str, Any]:
    """A same-zone member that must run in the zone of the cache pods (its own required affinity)."""
    pod = job_pod(annotation=annotation)
    pod["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [OWN_TERM]}}
    return pod


def test_a_member_with_its_own_pod_affinity_is_refused_where_the_affinity_is_the_zone_rule() -> None:
    response = answer(beside_the_cache())
    assert response["allowed"] is False
    assert response["status"]["message"] == f"{JOB_REFUSAL_PREFIX}: {OWN_POD_AFFINITY_CONFLICT}"
    warned = answer(beside_the_cache(), AdmissionSettings(invalid_annotation="warn"))
    assert warned["warnings"] == [f"{JOB_REFUSAL_PREFIX}: {OWN_POD_AFFINITY_CONFLICT}"]


def test_in_plugin_mode_a_member_with_its_own_pod_affinity_keeps_it_alone() -> None:
    pod = beside_the_cache()
    response = answer(pod, AdmissionSettings(zone_keeper="plugin"))
    assert response["allowed"] is True
    result = jsonpatch.apply_patch(pod, orjson.loads(base64.b64decode(response["patch"])))
    affinity = result["spec"]["affinity"]
    assert affinity["podAffinity"] == {"requiredDuringSchedulingIgnoredDuringExecution": [OWN_TERM]}
    assert "nodeAffinity" in affinity, "the GPU-memory rule is still written"
    assert answer(job_pod(), AdmissionSettings(zone_keeper="plugin"))["allowed"] is True


def test_the_webhook_role_takes_the_zone_keeper_from_the_scheduler_mode() -> None:
    with pytest.raises(ValueError, match="zone_keeper must be one of plugin, affinity"):
        AdmissionSettings(zone_keeper="jobzone")  # type: ignore[arg-type]


def test_a_jobset_pod_gets_the_affinity_on_its_jobsets_label() -> None:
    """Only the zone-policy and job-size annotations on the pod template: the JobSet's label names
    the job, and the term selects its pods by that label."""
    pod = job_pod(job=None)
    pod["metadata"]["labels"] = {
        JOBSET_NAME_LABEL: "train",
        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
    }
    term = patched(pod)["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == [
        {"labelSelector": {"matchLabels": {JOBSET_NAME_LABEL: "train"}}, "topologyKey": ZONE_LABEL}
    ]


def test_a_jobset_pod_without_a_size_is_refused_asking_for_the_annotation() -> None:
    pod = job_pod(job=None)
    del pod["metadata"]["annotations"][JOB_SIZE_ANNOTATION]
    pod["metadata"]["labels"] = {JOBSET_NAME_LABEL: "train"}
    response = answer(pod)
    assert response["allowed"] is False
    reason = SIZE_NOT_ON_POD.format(owner="a JobSet", annotation=JOB_SIZE_ANNOTATION)
    assert response["status"]["message"] == f"{JOB_REFUSAL_PREFIX}: {reason}"


def test_an_indexed_job_pod_without_a_size_gets_the_affinity_on_its_jobs_name_and_uid() -> None:
    """An Indexed Job's pod as the Job controller makes it: the size is the Job's (the scheduler reads
    it), so the webhook admits the pod and keeps the job in one zone by its Job's name and uid, which
    a terminating pod of an earlier Job of the same name does not carry."""
    pod = job_pod(job=None)
    del pod["metadata"]["annotations"][JOB_SIZE_ANNOTATION]
    pod["metadata"]["annotations"][JOB_COMPLETION_INDEX] = "2"
    pod["metadata"]["labels"] = {
        JOB_NAME_LABEL: "ft",
        JOB_CONTROLLER_UID_LABEL: "0c7d",
        JOB_COMPLETION_INDEX: "2",
    }
    term = patched(pod)["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    selector = {JOB_CONTROLLER_UID_LABEL: "0c7d", JOB_NAME_LABEL: "ft"}
    assert term == [{"labelSelector": {"matchLabels": selector}, "topologyKey": ZONE_LABEL}]


def test_a_leaderworkerset_leader_is_admitted_before_its_group_index_and_patched_after() -> None:
    """LeaderWorkerSet's webhook labels a leader with its group index, possibly after ours: the first
    call admits the pod unchanged (no denial), the reinvocation writes the group's term."""
    pod = job_pod(job=None, annotation=None)
    annotations = pod["metadata"]["annotations"]
    del annotations[JOB_SIZE_ANNOTATION]
    annotations[LWS_SIZE_ANNOTATION] = "4"
    pod["metadata"]["labels"] = {LWS_NAME_LABEL: "llama", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    assert answer(pod) == {"uid": UID, "allowed": True}
    pod["metadata"]["labels"][LWS_GROUP_INDEX_LABEL] = "0"
    term = patched(pod)["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    selector = {LWS_NAME_LABEL: "llama", LWS_GROUP_INDEX_LABEL: "0"}
    assert term == [{"labelSelector": {"matchLabels": selector}, "topologyKey": ZONE_LABEL}]
