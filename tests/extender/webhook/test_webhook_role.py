"""The same program in its webhook role: ``POST /mutate`` over real TLS on loopback.

The AdmissionReview logic itself is covered by ``test_admission.py``; these tests prove what the
server adds: the route (and only it) in the webhook role, TLS without a client certificate by
default (and with one when a client CA is configured), the deny/warn setting reaching the
answer, the webhook's own body cap, the log line and the metrics, and the flags.
"""

import base64
from dataclasses import replace
from typing import Any

import jsonpatch
import orjson
import pytest

import policy
from contracts.server import ROLE_WEBHOOK
from extender_app.cli import settings_from
from extender_app.settings import WEBHOOK_MAX_BODY_BYTES, ExtenderSettings
from policy.node_affinity import MAX_REQUIRED_TERMS_BYTES
from testbed.admission_reviews import UID, admission_review, gpu_pod
from testbed.extender import (
    ThreadedExtender,
    client_context,
    refusal,
    request,
    scheduler_context,
    settings_for,
    wait_for,
)
from testbed.pki import Pki


def webhook(pki: Pki, **overrides: object) -> ThreadedExtender:
    """The webhook role with the defaults ``--role webhook`` gives (no client CA, its body cap)."""
    role_defaults = settings_from(["--role", "webhook"], {})
    base = settings_for(pki, role=ROLE_WEBHOOK)
    settings = replace(base, client_ca=role_defaults.client_ca, max_body_bytes=role_defaults.max_body_bytes)
    return ThreadedExtender(replace(settings, **overrides), pki).start()  # type: ignore[arg-type]


@pytest.fixture
def server(pki: Pki):
    running = webhook(pki)
    yield running
    running.stop()


def mutate(server: ThreadedExtender, body: bytes) -> dict[str, Any]:
    """POST /mutate as kube-apiserver does (verifies the server, presents no certificate)."""
    reply = request(server.ports.port, client_context(server.pki), "/mutate", body)
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == "application/json"
    document = orjson.loads(reply.body)
    assert (document["apiVersion"], document["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    response: dict[str, Any] = document["response"]
    assert response["uid"] == UID
    return response


def test_an_annotated_pod_comes_back_with_the_affinity_over_tls_without_a_client_certificate(server):
    original = gpu_pod("40960")
    response = mutate(server, admission_review(original))
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(original, orjson.loads(base64.b64decode(response["patch"])))
    required = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == [
        {"matchExpressions": alternative} for alternative in policy.memory_alternatives(40960)
    ]


def test_the_served_patch_protects_the_pod_unless_turned_off(server, pki):
    """The default server adds the autoscalers' opt-out annotations; ``--disruption-protection off``
    only the affinity."""
    original = gpu_pod("40960")
    response = mutate(server, admission_review(original))
    patched = jsonpatch.apply_patch(original, orjson.loads(base64.b64decode(response["patch"])))
    assert patched["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
    assert patched["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "false"
    off = webhook(
        pki, disruption_protection=settings_from(["--disruption-protection", "off"], {}).disruption_protection
    )
    try:
        response = mutate(off, admission_review(original))
        patched = jsonpatch.apply_patch(original, orjson.loads(base64.b64decode(response["patch"])))
        assert patched["metadata"]["annotations"] == original["metadata"]["annotations"]
    finally:
        off.stop()


def test_invalid_annotation_is_denied_with_the_policy_message_by_default(server):
    response = mutate(server, admission_review(gpu_pod("40GiB")))
    assert response["allowed"] is False
    assert response["status"]["message"] == f"{policy.MIN_MEMORY_ANNOTATION}: {policy.INVALID_MIN_MEMORY}"
    response = mutate(server, admission_review(gpu_pod("40960", gpus=None)))
    assert response["allowed"] is False
    assert response["status"]["message"] == f"{policy.MIN_MEMORY_ANNOTATION}: {policy.REQUIRES_GPU_REQUEST}"


def test_warn_admits_invalid_annotations_with_a_warning(pki):
    server = webhook(pki, invalid_annotation="warn")
    try:
        for pod, message in (
            (gpu_pod("0"), policy.INVALID_MIN_MEMORY),
            (gpu_pod("16384", gpus="0"), policy.REQUIRES_GPU_REQUEST),
        ):
            response = mutate(server, admission_review(pod))
            assert response["allowed"] is True
            assert response["warnings"] == [f"{policy.MIN_MEMORY_ANNOTATION}: {message}"]
            assert "patch" not in response
    finally:
        server.stop()


def test_a_malformed_review_is_400_with_its_reason(server):
    reply = request(server.ports.port, client_context(server.pki), "/mutate", b'{"kind": "Pod"}')
    assert reply.status == 400
    assert b"admission.k8s.io/v1 AdmissionReview" in reply.body
    reply = request(server.ports.port, client_context(server.pki), "/mutate", b"[")
    assert reply.status == 400


def test_only_mutate_is_served_in_the_webhook_role_and_only_the_verbs_in_the_extender_role(server, extender):
    context = client_context(server.pki)
    for path in ("/filter", "/prioritize"):
        assert request(server.ports.port, context, path, b"{}").status == 404
    assert request(server.ports.port, context, "/mutate", method="GET").status == 405
    reply = request(
        extender.ports.port, scheduler_context(extender.pki), "/mutate", admission_review(gpu_pod())
    )
    assert reply.status == 404


def test_the_webhook_body_cap_is_its_own(server):
    too_large = b" " * (WEBHOOK_MAX_BODY_BYTES + 1)
    reply = request(server.ports.port, client_context(server.pki), "/mutate", too_large)
    assert reply.status == 413
    assert b"--max-body-bytes" in reply.body


def test_with_a_client_ca_the_webhook_requires_a_client_certificate(pki):
    server = webhook(pki, client_ca=str(pki.client_ca))
    try:
        body = admission_review(gpu_pod())
        assert refusal(lambda: request(server.ports.port, client_context(pki), "/mutate", body)) is not None
        assert request(server.ports.port, scheduler_context(pki), "/mutate", body).status == 200
    finally:
        server.stop()


def test_one_log_line_and_metrics_per_review(server):
    mutate(server, admission_review(gpu_pod("40960")))
    mutate(server, admission_review(gpu_pod("oops")))
    mutate(server, admission_review(gpu_pod(None)))
    wait_for(lambda: len(server.logs.requests()) == 3, "three request log lines")
    lines = server.logs.requests()
    assert [(line["verb"], line["pod"], line["admission"]) for line in lines] == [
        ("mutate", "ml/train", "patched"),
        ("mutate", "ml/train", "denied"),
        ("mutate", "ml/train", "unchanged"),
    ]
    assert all(line["status"] == 200 and line["client_cn"] == "" for line in lines)
    metrics = request(server.ports.health_port, None, "/metrics", method="GET").body.decode()
    assert 'gpu_extender_requests_total{status="200",verb="mutate"} 3.0' in metrics
    assert "candidate_nodes_total{" not in metrics
    ready = request(server.ports.health_port, None, "/readyz", method="GET")
    assert ready.status == 200


def test_role_flags_defaults_and_checks():
    webhook_settings = settings_from(["--role", "webhook"], {})
    assert webhook_settings.role == ROLE_WEBHOOK
    assert webhook_settings.client_ca == ""
    assert webhook_settings.max_body_bytes == WEBHOOK_MAX_BODY_BYTES
    assert webhook_settings.invalid_annotation == "deny"
    chosen = settings_from(
        ["--client-ca", "/ca.crt", "--invalid-annotation", "warn"],
        {"EXTENDER_ROLE": "webhook", "EXTENDER_MAX_BODY_BYTES": "1024"},
    )
    assert (chosen.client_ca, chosen.max_body_bytes, chosen.invalid_annotation) == ("/ca.crt", 1024, "warn")
    assert settings_from([], {}) == ExtenderSettings()
    with pytest.raises(ValueError, match="role must be one of extender, webhook"):
        settings_from(["--role", "mutator"], {})
    with pytest.raises(ValueError, match="invalid_annotation must be one of deny, warn"):
        settings_from(["--role", "webhook", "--invalid-annotation", "ignore"], {})
    assert webhook_settings.disruption_protection == "on"
    with pytest.raises(ValueError, match="disruption_protection must be one of on, off"):
        settings_from(["--role", "webhook", "--disruption-protection", "yes"], {})
    with pytest.raises(ValueError, match="the extender requires client certificates"):
        settings_from(["--client-ca", ""], {})
    with pytest.raises(ValueError, match="node_cache must be off in the webhook role"):
        settings_from(["--role", "webhook", "--node-cache", "watch"], {})
    assert webhook_settings.max_node_selector_bytes == MAX_REQUIRED_TERMS_BYTES
    bound = settings_from(["--role", "webhook", "--max-node-selector-bytes", "4096"], {})
    assert bound.max_node_selector_bytes == 4096
    with pytest.raises(ValueError, match=r"max_node_selector_bytes must be 1\.\.16777216"):
        settings_from(["--role", "webhook", "--max-node-selector-bytes", "0"], {})
