"""The webhook's AdmissionReview answers: the affinity patch, denials and warnings, malformed reviews."""

import base64
import copy
from http import HTTPStatus
from typing import Any

import jsonpatch
import orjson
import pytest

import policy
from extender_app.verbs.wire import WireError
from extender_app.webhook.admission import AdmissionSettings, review
from policy.node_affinity import (
    MAX_REQUIRED_TERMS,
    MAX_REQUIRED_TERMS_BYTES,
    TERMS_TOO_LARGE_FORMAT,
    TOO_MANY_TERMS_FORMAT,
    capacity_alternatives,
    memory_alternatives,
)
from testbed.admission_reviews import UID, admission_review
from testbed.admission_reviews import gpu_pod as pod


def answer(body: bytes, settings: AdmissionSettings | None = None) -> dict[str, Any]:
    document = orjson.loads(review(body, settings or AdmissionSettings()))
    assert document["apiVersion"] == "admission.k8s.io/v1"
    assert document["kind"] == "AdmissionReview"
    response: dict[str, Any] = document["response"]
    assert response["uid"] == UID
    return response


def test_an_annotated_gpu_pod_gets_the_memory_affinity() -> None:
    original = pod()
    response = answer(admission_review(original))
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(original, orjson.loads(base64.b64decode(response["patch"])))
    terms = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    ours = {"key": policy.NODE_MEMORY_LABEL, "operator": "Gt", "values": ["40959"]}
    assert terms["nodeSelectorTerms"][0] == {"matchExpressions": [ours]}, "our label's term comes first"
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": alternative} for alternative in memory_alternatives(40960)
    ]
    again = answer(admission_review(patched))
    assert again == {"uid": UID, "allowed": True}, "reinvocation changes nothing"


def test_a_capacity_type_choice_is_written_as_affinity_beside_the_minimum() -> None:
    original = pod()
    original["metadata"]["annotations"][policy.CAPACITY_TYPE_ANNOTATION] = "on-demand"
    response = answer(admission_review(original))
    patched = jsonpatch.apply_patch(original, orjson.loads(base64.b64decode(response["patch"])))
    terms = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    capacity = {"key": policy.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand", "reserved"]}
    memory = {"key": policy.NODE_MEMORY_LABEL, "operator": "Gt", "values": ["40959"]}
    assert terms["nodeSelectorTerms"][0] == {"matchExpressions": [memory, capacity]}
    expected = [
        {"matchExpressions": [*memory_way, *capacity_way]}
        for memory_way in memory_alternatives(40960)
        for capacity_way in capacity_alternatives("on-demand")
    ]
    assert terms["nodeSelectorTerms"] == expected
    assert answer(admission_review(patched)) == {"uid": UID, "allowed": True}, "reinvocation changes nothing"


def test_an_invalid_capacity_type_is_denied_naming_its_annotation() -> None:
    original = pod()
    original["metadata"]["annotations"][policy.CAPACITY_TYPE_ANNOTATION] = "SPOT"
    denied = answer(admission_review(original))
    assert denied["allowed"] is False
    message = f"{policy.CAPACITY_TYPE_ANNOTATION}: {policy.INVALID_CAPACITY_CHOICE}"
    assert denied["status"] == {"code": HTTPStatus.UNPROCESSABLE_ENTITY, "message": message}


def patched_pod(original: dict[str, Any], settings: AdmissionSettings | None = None) -> dict[str, Any]:
    response = answer(admission_review(original), settings)
    result: dict[str, Any] = jsonpatch.apply_patch(
        original, orjson.loads(base64.b64decode(response["patch"]))
    )
    return result


def test_an_annotated_gpu_pod_keeps_its_node_from_both_autoscalers() -> None:
    """On by default: a training job is not evicted for a consolidation or a scale-down."""
    annotations = patched_pod(pod())["metadata"]["annotations"]
    assert annotations == {
        policy.MIN_MEMORY_ANNOTATION: "40960",
        "karpenter.sh/do-not-disrupt": "true",
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    }


def test_a_protection_the_pod_declined_is_kept_and_the_affinity_already_there_stays() -> None:
    original = pod()
    original["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] = "true"
    first = patched_pod(original)
    assert first["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "true"
    # A pod that already has the affinity (a reinvocation, or written by hand) still gets the annotations.
    del first["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"]
    again = patched_pod(first)
    assert again["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
    assert again["spec"]["affinity"] == first["spec"]["affinity"]


def test_without_protection_only_the_affinity_is_added() -> None:
    settings = AdmissionSettings(protect_from_disruption=False)
    assert patched_pod(pod(), settings)["metadata"]["annotations"] == {policy.MIN_MEMORY_ANNOTATION: "40960"}


@pytest.mark.parametrize(
    "body",
    [
        admission_review(pod(annotation=None)),
        admission_review(pod(annotation=None, gpus=None)),
        admission_review(pod(), operation="UPDATE"),
        admission_review({"kind": "ConfigMap"}, kind="ConfigMap"),
    ],
    ids=["no-annotation", "cpu-pod", "update", "not-a-pod"],
)
def test_what_needs_no_change_is_admitted_unchanged(body: bytes) -> None:
    assert answer(body) == {"uid": UID, "allowed": True}


@pytest.mark.parametrize(
    ("annotation", "gpus", "message"),
    [
        ("40Gi", "1", policy.INVALID_MIN_MEMORY),
        ("0", "1", policy.INVALID_MIN_MEMORY),
        ("40960", None, policy.REQUIRES_GPU_REQUEST),
        ("40960", "0", policy.REQUIRES_GPU_REQUEST),
    ],
)
def test_a_pod_the_policy_refuses_is_denied_with_its_message_or_warned(
    annotation: str, gpus: str | None, message: str
) -> None:
    body = admission_review(pod(annotation, gpus))
    denied = answer(body)
    assert denied["allowed"] is False
    assert denied["status"] == {
        "code": HTTPStatus.UNPROCESSABLE_ENTITY,
        "message": f"{policy.MIN_MEMORY_ANNOTATION}: {message}",
    }
    assert "patch" not in denied

    warned = answer(body, AdmissionSettings(invalid_annotation="warn"))
    assert warned == {"uid": UID, "allowed": True, "warnings": [f"{policy.MIN_MEMORY_ANNOTATION}: {message}"]}


def test_keys_come_from_the_policy_settings() -> None:
    settings = AdmissionSettings(policy=policy.PolicySettings(node_memory_label="example.org/vram-mib"))
    response = answer(admission_review(pod()), settings)
    operation, *_annotations = orjson.loads(base64.b64decode(response["patch"]))
    selector = operation["value"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert selector["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "example.org/vram-mib"


def _review_with(**changes: object) -> bytes:
    document = orjson.loads(admission_review(pod()))
    document.update(changes)
    return orjson.dumps(document)


def _request_with(**changes: object) -> bytes:
    document = orjson.loads(admission_review(pod()))
    request = copy.deepcopy(document["request"])
    request.update(changes)
    document["request"] = request
    return orjson.dumps(document)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "exactly one JSON object"),
        (b"{", "exactly one JSON object"),
        (admission_review(pod()) + b"{}", "exactly one JSON object"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "must be a JSON object (AdmissionReview)"),
        (
            _review_with(apiVersion="admission.k8s.io/v1beta1"),
            "must be an admission.k8s.io/v1 AdmissionReview",
        ),
        (_review_with(kind="Pod"), "must be an admission.k8s.io/v1 AdmissionReview"),
        (_review_with(request=None), "AdmissionReview.request must be an object"),
        (_request_with(uid=""), "request.uid must be a non-empty string"),
        (_request_with(uid=7), "request.uid must be a non-empty string"),
    ],
    ids=[
        "empty",
        "truncated",
        "trailing",
        "not-utf8",
        "array",
        "v1beta1",
        "wrong-kind",
        "no-request",
        "empty-uid",
        "uid-number",
    ],
)
def test_a_malformed_review_is_a_400_with_its_reason(body: bytes, reason: str) -> None:
    with pytest.raises(WireError) as raised:
        review(body, AdmissionSettings())
    assert raised.value.status == HTTPStatus.BAD_REQUEST
    assert reason in raised.value.reason


def test_an_unknown_invalid_annotation_action_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid_annotation must be one of deny, warn"):
        AdmissionSettings(invalid_annotation="ignore")  # type: ignore[arg-type]


ON_DEMAND_CHOICE = {"key": policy.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand", "reserved"]}
DEFAULT_ON_DEMAND = AdmissionSettings(capacity=policy.CapacityTypeSettings(default_choice="on-demand"))


def required_expressions(patched: dict[str, Any]) -> list[dict[str, Any]]:
    """The first required term's expressions: the one on our labels."""
    terms = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    term = terms["nodeSelectorTerms"][0]
    expressions: list[dict[str, Any]] = term["matchExpressions"]
    return expressions


def test_the_default_choice_is_written_for_a_pod_of_the_custom_scheduler_without_the_annotation() -> None:
    original = pod()
    del original["metadata"]["annotations"][policy.MIN_MEMORY_ANNOTATION]
    assert required_expressions(patched_pod(original, DEFAULT_ON_DEMAND)) == [ON_DEMAND_CHOICE]
    assert answer(admission_review(original)) == {"uid": UID, "allowed": True}, "no default: unchanged"


def test_the_pods_own_choice_wins_over_the_default() -> None:
    original = pod()
    original["metadata"]["annotations"][policy.CAPACITY_TYPE_ANNOTATION] = "spot"
    spot = {"key": policy.CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot"]}
    assert spot in required_expressions(patched_pod(original, DEFAULT_ON_DEMAND))


def test_a_pod_of_another_scheduler_gets_no_default_choice() -> None:
    original = pod()
    original["spec"]["schedulerName"] = "default-scheduler"
    expressions = required_expressions(patched_pod(original, DEFAULT_ON_DEMAND))
    assert ON_DEMAND_CHOICE not in expressions
    assert [expression["key"] for expression in expressions] == [policy.NODE_MEMORY_LABEL]


def with_terms(terms: list[Any]) -> dict[str, Any]:
    """An annotated GPU pod choosing on-demand, with ``terms`` as its required node-selector terms."""
    annotated = pod()
    annotated["metadata"]["annotations"][policy.CAPACITY_TYPE_ANNOTATION] = "on-demand"
    required = {"nodeSelectorTerms": terms}
    annotated["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    return annotated


def zone_terms(count: int) -> list[Any]:
    return [
        {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [f"z-{index}"]}
            ]
        }
        for index in range(count)
    ]


def test_a_pod_with_1600_terms_of_its_own_is_denied_with_the_counts() -> None:
    denied = answer(admission_review(with_terms(zone_terms(1600))))
    assert denied["allowed"] is False
    merged = 1600 * len(memory_alternatives(40960)) * len(capacity_alternatives("on-demand"))
    expected = TOO_MANY_TERMS_FORMAT.format(own=1600, merged=merged, limit=MAX_REQUIRED_TERMS)
    assert denied["status"]["message"] == f"spec.affinity.nodeAffinity: {expected}"


def test_a_term_with_20000_values_is_denied_for_its_size_not_answered_with_megabytes() -> None:
    values = [f"r{index:06d}" for index in range(20_000)]
    terms = [{"matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": values}]}]
    body = admission_review(with_terms(terms))
    denied = answer(body)
    assert denied["allowed"] is False
    message = denied["status"]["message"]
    prefix, _, rest = TERMS_TOO_LARGE_FORMAT.partition("{size}")
    assert message.startswith(f"spec.affinity.nodeAffinity: {prefix}")
    assert message.endswith(rest.format(limit=MAX_REQUIRED_TERMS_BYTES))
    assert len(review(body, AdmissionSettings())) < 1024


def test_the_size_bound_is_the_webhooks_setting() -> None:
    body = admission_review(with_terms(zone_terms(1)))
    assert "patch" in answer(body)
    denied = answer(body, AdmissionSettings(max_node_selector_bytes=1000))
    assert denied["allowed"] is False
    assert denied["status"]["message"].endswith(
        TERMS_TOO_LARGE_FORMAT.partition("{size}")[2].format(limit=1000)
    )
