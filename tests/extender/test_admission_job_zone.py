"""The webhook and same-zone jobs: the pod affinity on the job label, and refused job annotations."""

import base64
from typing import Any

import jsonpatch
import orjson
import pytest

from extender_app.webhook.admission import JOB_REFUSAL_PREFIX, AdmissionSettings, review
from policy.job_zone import (
    INVALID_JOB_SIZE,
    INVALID_ZONE_POLICY,
    JOB_LABEL,
    JOB_SIZE_ANNOTATION,
    MISSING_JOB_NAME,
    ZONE_LABEL,
    ZONE_POLICY_ANNOTATION,
    JobZoneSettings,
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
    ],
    ids=["job-size", "zone-policy", "no-job-name"],
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
