"""The extender image as the extender and webhook Deployments run it: user 65532, a read-only root
file system, mutual TLS on the extender port, the webhook role, and a clean exit on SIGTERM."""

import base64
import subprocess
from pathlib import Path

import jsonpatch
import orjson
import pytest

import policy
from components.pod_security import NONROOT_UID
from localcluster.host.images import LocalImages, podman
from localcluster.host.probes import LOOPBACK
from localcluster.host.processes import ProcessGroup
from localcluster.services.custom_scheduler import RunningExtender, launch_extender
from localcluster.services.webhook import launch_webhook
from testbed.admission_reviews import UID, admission_review, gpu_pod
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import client_context, refusal, request, scheduler_context
from testbed.pki import Pki

MINIMUM_MIB = 40960
"""The test pod's minimum: some of the fixture's instance types meet it, some do not."""


def container_name(server: RunningExtender) -> str:
    return next(arg.removeprefix("--name=") for arg in server.argv if arg.startswith("--name="))


def process_uid(name: str) -> int:
    """The real user of the container's main process, read from the host's /proc."""
    pid = podman("inspect", "--format", "{{.State.Pid}}", name).strip()
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:")))


def tls_args(pki: Pki, port: int, health_port: int) -> list[str]:
    return [
        f"--tls-cert={pki.server_cert}",
        f"--tls-key={pki.server_key}",
        f"--bind={LOOPBACK}",
        f"--port={port}",
        f"--health-port={health_port}",
    ]


@pytest.fixture
def extender(images: LocalImages, processes: ProcessGroup, pki: Pki) -> RunningExtender:
    """The extender from its image with the test PKI, /readyz answering (stopped with ``processes``)."""
    port, health_port = processes.reserve_ports(2)
    args = [*tls_args(pki, port, health_port), f"--client-ca={pki.client_ca}"]
    return launch_extender(processes, args, port, health_port, images=images)


def test_runs_as_nonroot_on_a_read_only_root(extender: RunningExtender) -> None:
    name = container_name(extender)
    assert process_uid(name) == NONROOT_UID, "the user the Deployments run as"
    with pytest.raises(subprocess.CalledProcessError) as refused:
        podman("exec", name, "python3", "-c", "open('/app/written-at-run-time', 'w')")
    assert "Read-only file system" in refused.value.stderr


def test_filters_over_mutual_tls_and_refuses_a_client_without_certificate(
    extender: RunningExtender, pki: Pki
) -> None:
    assert request(extender.health_port, None, "/readyz", method="GET").status == 200
    nodes = make_nodes(6)
    reply = request(
        extender.port,
        scheduler_context(pki),
        "/filter",
        extender_body(make_pod(min_memory_mib=MINIMUM_MIB), nodes),
    )
    assert reply.status == 200
    result = orjson.loads(reply.body)
    kept = {node["metadata"]["name"] for node in result["Nodes"]["items"]}
    refused = result["FailedAndUnresolvableNodes"]
    assert kept, "some of the fixture's types must meet the minimum"
    assert refused, "some of the fixture's types must not"
    assert kept | set(refused) == {node["metadata"]["name"] for node in nodes}
    labels = {
        node["metadata"]["name"]: int(node["metadata"]["labels"][policy.NODE_MEMORY_LABEL]) for node in nodes
    }
    assert all(labels[name] >= MINIMUM_MIB for name in kept)
    assert all(
        labels[name] < MINIMUM_MIB and reason == policy.BELOW_MINIMUM for name, reason in refused.items()
    )
    no_certificate = client_context(pki)
    body = extender_body(make_pod(), nodes)
    assert refusal(lambda: request(extender.port, no_certificate, "/filter", body)) is not None


def test_sigterm_exits_zero(extender: RunningExtender) -> None:
    assert extender.process.stop() == 0, extender.process.log_tail()


def test_webhook_role_mutates_an_annotated_pod(
    images: LocalImages, processes: ProcessGroup, pki: Pki
) -> None:
    port, health_port = processes.reserve_ports(2)
    webhook = launch_webhook(
        processes, ["--role=webhook", *tls_args(pki, port, health_port)], port, health_port, images
    )
    original = gpu_pod(str(MINIMUM_MIB))
    reply = request(port, client_context(pki), "/mutate", admission_review(original))
    assert reply.status == 200
    response = orjson.loads(reply.body)["response"]
    assert response["uid"] == UID
    assert response["allowed"] is True
    patched = jsonpatch.apply_patch(original, orjson.loads(base64.b64decode(response["patch"])))
    terms = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    ours = {"key": policy.NODE_MEMORY_LABEL, "operator": "Gt", "values": [str(MINIMUM_MIB - 1)]}
    assert terms["nodeSelectorTerms"][0] == {"matchExpressions": [ours]}
    # Started without the stack's flags: the vendor labels, and no GPU table.
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": alternative} for alternative in policy.memory_alternatives(MINIMUM_MIB)
    ]
    assert webhook.server.process.stop() == 0
