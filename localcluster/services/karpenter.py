"""Real Karpenter (its kwok cloud provider) and kwok against the local control plane.

What runs, all on loopback and stopped with the control plane:

- ``karpenter-kwok``: Karpenter built from ``sigs.k8s.io/karpenter/kwok`` (``make
  autoscaler-binaries``). Its cloud provider "launches" an instance by creating a Node object
  (annotated ``kwok.x-k8s.io/node=fake``) of an instance type from ``INSTANCE_TYPES_FILE_PATH``,
  here the GPU types of the local inventory with our memory label as an offering requirement
  (``localcluster.services.karpenter_instance_types``). It runs with the admin kubeconfig, as a local
  process: no ServiceAccount, no RBAC of its own (in a cluster its Helm chart brings both), no
  leader election (``DISABLE_LEADER_ELECTION=true``), metrics and health probes on free ports
  (Karpenter binds them as ``:PORT``, on every interface: its operator hard-codes that; they
  serve only metrics and health). Its CRDs (NodePool, NodeClaim, NodeOverlay, CapacityBuffer,
  KWOKNodeClass) come from the module, published next to the binary by the build.
- ``kwok``: fakes the kubelet of those nodes only (``--manage-nodes-with-annotation-selector``):
  its Stages (from the kwok module's ``kustomize/stage/``) make them Ready, heartbeat, and run
  the pods bound to them.
- ``python -m localcluster.plane.node_readiness``: lifts the ``node.kubernetes.io/not-ready`` taint
  from a node once it is Ready, which kube-controller-manager does in a real cluster; without it
  Karpenter's nodes keep the taint (Karpenter reports KnownEphemeralTaintsExist) and no pod
  could bind to them.

One NodePool per zone, ``gpu-<zone>`` (the KWOKNodeClass ``default``), launches on-demand nodes
in its zone with the GPU taint and the device plugin's ``nvidia.com/gpu.present`` label, as the
Pulumi program's GPU node groups have; consolidation is off so that a node lives as long as the
run. One pool per zone, not one for all zones, so that a same-zone job's NodeClaims land in one
zone (docs/karpenter-local.md#same-zone-jobs: with one multi-zone pool, Karpenter v1.14.1 may
give the job's first NodeClaim two candidate zones and the next ones other zones).
"""

import contextlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import yaml

from contracts.cluster import GPU_PRESENT_LABEL
from contracts.release import REPO_ROOT
from localcluster.host.probes import LOOPBACK, http_status
from localcluster.host.processes import ManagedProcess, ProcessGroup, python_module_argv, raise_if_exited
from localcluster.host.waiting import WaitTimeout, wait_for, wait_until
from localcluster.plane.control_plane import ControlPlane
from localcluster.plane.inventory import InstanceType, load_inventory
from localcluster.plane.nodes import GPU_TAINT, ZONES
from localcluster.services.karpenter_instance_types import KARPENTER_INSTANCE_TYPES, karpenter_instance_types
from policy.capacity_type import KARPENTER_CAPACITY_TYPE_LABEL
from policy.job_zone import ZONE_LABEL

KARPENTER_BINARY = "karpenter-kwok"
KWOK_BINARY = "kwok"
CRD_DIR = "karpenter-crds"
"""Under the binaries' directory: Karpenter's CRDs as ``make autoscaler-binaries`` publishes them."""
KWOK_STAGES_DIR = "kwok-stages"
"""Under the binaries' directory: kwok's node and pod Stages as the build publishes them."""

NODE_POOL = "gpu"
"""The NodePool's name, and the prefix of the per-zone pools' names (``gpu-<zone>``)."""
NODE_CLASS = "default"
KARPENTER_GROUP = "karpenter.sh"
KARPENTER_VERSION = "v1"
KWOK_GROUP = "karpenter.kwok.sh"
KWOK_VERSION = "v1alpha1"
KARPENTER_NODE_POOL_LABEL = "karpenter.sh/nodepool"
"""Karpenter labels each node it launches with its NodePool."""
LAUNCHED_CONDITION = "Launched"
"""The NodeClaim condition Karpenter sets True once the cloud provider made the instance; the
offering's labels (instance type, zone, capacity type, and any an offering requirement carries)
are written to the claim in the same reconcile, before that condition."""
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node=fake"
"""What Karpenter's kwok provider puts on its Nodes; kwok manages only nodes that carry it."""

CRD_ESTABLISHED_SECONDS = 30.0
KARPENTER_READY_SECONDS = 60.0
KWOK_READY_SECONDS = 30.0
LAUNCH_SECONDS = 60.0
"""How long a NodeClaim Karpenter made may take to be launched (its offering's labels written)."""
NODE_POOLS_READY_SECONDS = 60.0
"""How long Karpenter may take to mark every NodePool Ready; it ignores a pool until then, so a pod
submitted earlier can get a lower-weight pool."""
KARPENTER_LOG_LEVEL = "info"


@dataclass
class RunningKarpenter:
    """The autoscaler's processes and the instance types it may launch."""

    karpenter: ManagedProcess
    kwok: ManagedProcess
    readiness: ManagedProcess
    instance_types_file: Path
    instance_types: dict[str, InstanceType]


def node_class_manifest() -> dict[str, Any]:
    """The KWOKNodeClass every NodeClaim refers to (nodes register at once)."""
    return {
        "apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}",
        "kind": "KWOKNodeClass",
        "metadata": {"name": NODE_CLASS},
        "spec": {},
    }


def node_pool_manifest(zone: str | None = None) -> dict[str, Any]:
    """GPU nodes as the Pulumi program's node groups make them: tainted, labelled, on-demand; with
    ``zone``, the pool ``gpu-<zone>`` launching in that zone only (None: ``gpu``, every zone)."""
    requirements: list[dict[str, Any]] = [
        {"key": KARPENTER_CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]}
    ]
    if zone is not None:
        requirements.append({"key": ZONE_LABEL, "operator": "In", "values": [zone]})
    return {
        "apiVersion": f"{KARPENTER_GROUP}/{KARPENTER_VERSION}",
        "kind": "NodePool",
        "metadata": {"name": NODE_POOL if zone is None else f"{NODE_POOL}-{zone}"},
        "spec": {
            "template": {
                "metadata": {"labels": {GPU_PRESENT_LABEL: "true"}},
                "spec": {
                    "nodeClassRef": kwok_node_class_ref(),
                    "requirements": requirements,
                    "taints": [dict(GPU_TAINT)],
                    "expireAfter": "Never",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
        },
    }


def zonal_node_pools(zones: Sequence[str] = ZONES) -> list[dict[str, Any]]:
    """The default pools: one ``node_pool_manifest(zone)`` per zone. Equal weights, so Karpenter
    tries them by name in reverse (a job's first NodeClaim goes to the last zone by name that can
    launch it); every later member of a same-zone job follows it to that zone's pool."""
    return [node_pool_manifest(zone) for zone in zones]


def kwok_node_class_ref() -> dict[str, str]:
    """A NodePool's ``nodeClassRef`` to the local KWOKNodeClass (instead of an EC2NodeClass)."""
    return {"group": KWOK_GROUP, "kind": "KWOKNodeClass", "name": NODE_CLASS}


def install_crds(api: kubernetes.client.ApiClient, crd_dir: Path) -> list[str]:
    """Create every CRD in ``crd_dir`` (on a fresh control plane) and wait until each is Established."""
    files = sorted(crd_dir.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no CRDs in {crd_dir}: run `make autoscaler-binaries`")
    extensions = kubernetes.client.ApiextensionsV1Api(api)
    names = []
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                extensions.create_custom_resource_definition(document)
                names.append(document["metadata"]["name"])

    def established() -> bool:
        for name in names:
            conditions = extensions.read_custom_resource_definition(name).status.conditions or ()
            if not any(c.type == "Established" and c.status == "True" for c in conditions):
                return False
        return True

    wait_for(established, CRD_ESTABLISHED_SECONDS, "Karpenter's CRDs to be Established", interval=0.2)
    return names


def kwok_stages_config(stages_dir: Path) -> str:
    """kwok's ``--config``: its Stage objects, one YAML document each."""
    files = sorted(stages_dir.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no kwok Stages in {stages_dir}: run `make autoscaler-binaries`")
    return "\n---\n".join(path.read_text().strip() for path in files) + "\n"


def karpenter_env(
    kubeconfig: Path, instance_types_file: Path, metrics_port: int, health_port: int
) -> dict[str, str]:
    """Karpenter's settings (it reads them from the environment, as its Helm chart sets them)."""
    return {
        "KUBECONFIG": str(kubeconfig),
        "INSTANCE_TYPES_FILE_PATH": str(instance_types_file),
        "DISABLE_LEADER_ELECTION": "true",
        "METRICS_PORT": str(metrics_port),
        "HEALTH_PROBE_PORT": str(health_port),
        "LOG_LEVEL": KARPENTER_LOG_LEVEL,
    }


@contextlib.contextmanager
def running_karpenter(
    plane: ControlPlane,
    bin_dir: Path,
    work_dir: Path,
    node_pools: Sequence[Mapping[str, Any]] | None = None,
) -> Iterator[RunningKarpenter]:
    """CRDs, the NodePools (``node_pools``, each referring to the KWOKNodeClass; default: one per
    zone, ``zonal_node_pools``), kwok, the readiness lifter and Karpenter; all stopped on exit."""
    work_dir.mkdir(parents=True, exist_ok=True)
    api = plane.api_client()
    install_crds(api, bin_dir / CRD_DIR)
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_cluster_custom_object(KWOK_GROUP, KWOK_VERSION, "kwoknodeclasses", node_class_manifest())
    for pool in node_pools if node_pools is not None else zonal_node_pools():
        custom.create_cluster_custom_object(KARPENTER_GROUP, KARPENTER_VERSION, "nodepools", dict(pool))

    inventory = load_inventory()
    offered = {name: inventory[name] for name in KARPENTER_INSTANCE_TYPES}
    instance_types_file = work_dir / "instance-types.json"
    instance_types_file.write_text(json.dumps(karpenter_instance_types(offered.values()), indent=2) + "\n")
    stages_file = work_dir / "kwok-stages.yaml"
    stages_file.write_text(kwok_stages_config(bin_dir / KWOK_STAGES_DIR))

    processes = plane.processes
    kwok = processes.retry_on_address_in_use(
        lambda: _start_kwok(processes, bin_dir, plane.kubeconfig, stages_file), "kwok"
    )
    readiness = processes.start(
        "node-readiness",
        python_module_argv("localcluster.plane.node_readiness", f"--kubeconfig={plane.kubeconfig}"),
        cwd=REPO_ROOT,
    )
    karpenter = processes.retry_on_address_in_use(
        lambda: _start_karpenter(processes, bin_dir, plane.kubeconfig, instance_types_file), "Karpenter"
    )
    running = RunningKarpenter(karpenter, kwok, readiness, instance_types_file, offered)
    try:
        wait_for(
            lambda: _unready_node_pools(custom) == [],
            NODE_POOLS_READY_SECONDS,
            "Karpenter to mark every NodePool Ready",
            interval=0.25,
            also_check=raise_if_exited(karpenter),
        )
        raise_if_exited(readiness)()
        yield running
    finally:
        for process in (karpenter, readiness, kwok):
            process.stop()
            processes.forget(process)


def _unready_node_pools(custom: kubernetes.client.CustomObjectsApi) -> list[str]:
    """The NodePools whose Ready condition is not True (Karpenter's provisioner skips them)."""
    listed = custom.list_cluster_custom_object(KARPENTER_GROUP, KARPENTER_VERSION, "nodepools")
    return [
        pool["metadata"]["name"]
        for pool in listed["items"]
        if not any(
            condition.get("type") == "Ready" and condition.get("status") == "True"
            for condition in pool.get("status", {}).get("conditions", [])
        )
    ]


def _start_kwok(
    processes: ProcessGroup, bin_dir: Path, kubeconfig: Path, stages_file: Path
) -> ManagedProcess:
    """kwok on a fresh server port, waited for until /healthz is 200."""
    (port,) = processes.reserve_ports(1)
    kwok = processes.start(
        "kwok",
        [
            str(bin_dir / KWOK_BINARY),
            f"--kubeconfig={kubeconfig}",
            f"--config={stages_file}",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}",
            f"--server-address={LOOPBACK}:{port}",
        ],
    )
    wait_for(
        lambda: http_status(port, "/healthz") == 200,
        KWOK_READY_SECONDS,
        "kwok's /healthz",
        also_check=raise_if_exited(kwok),
    )
    return kwok


def _start_karpenter(
    processes: ProcessGroup, bin_dir: Path, kubeconfig: Path, instance_types_file: Path
) -> ManagedProcess:
    """Karpenter on fresh metrics and health ports, waited for until /readyz is 200."""
    metrics_port, health_port = processes.reserve_ports(2)
    karpenter = processes.start(
        "karpenter",
        [str(bin_dir / KARPENTER_BINARY)],
        env=karpenter_env(kubeconfig, instance_types_file, metrics_port, health_port),
    )
    wait_for(
        lambda: http_status(health_port, "/readyz") == 200,
        KARPENTER_READY_SECONDS,
        "Karpenter's /readyz",
        interval=0.25,
        also_check=raise_if_exited(karpenter),
    )
    return karpenter


def node_claims(api: kubernetes.client.ApiClient) -> list[Mapping[str, Any]]:
    """Every NodeClaim Karpenter made (it keeps them for the life of its nodes)."""
    custom = kubernetes.client.CustomObjectsApi(api)
    listed = custom.list_cluster_custom_object(KARPENTER_GROUP, KARPENTER_VERSION, "nodeclaims")
    items: list[Mapping[str, Any]] = listed["items"]
    return items


def is_launched(claim: Mapping[str, Any]) -> bool:
    """Whether Karpenter has launched the claim's instance (its ``Launched`` condition is True)."""
    conditions = (claim.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == LAUNCHED_CONDITION and c.get("status") == "True" for c in conditions)


def launched_node_claims(
    api: kubernetes.client.ApiClient, timeout: float = LAUNCH_SECONDS
) -> list[Mapping[str, Any]]:
    """Every NodeClaim, once each is launched.

    The kwok provider creates the Node (with every label) before Karpenter writes the offering's
    labels onto the NodeClaim, so a pod can be bound to the node of a claim that does not carry
    them yet: a claim is read for its labels only after this wait."""
    return wait_until(
        lambda: node_claims(api),
        lambda claims: all(is_launched(claim) for claim in claims),
        timeout,
        "every NodeClaim to be launched",
        describe=_claims_in_brief,
    )


def settled_node_claims(api: kubernetes.client.ApiClient) -> list[Mapping[str, Any]]:
    """For a report: every NodeClaim once launched, or as they are when one never launches (the
    report then shows what it lacks)."""
    try:
        return launched_node_claims(api)
    except WaitTimeout:
        return node_claims(api)


def _claims_in_brief(claims: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(
        f"{claim['metadata']['name']}: {'launched' if is_launched(claim) else 'not launched'},"
        f" labels {claim['metadata'].get('labels') or {}}"
        for claim in claims
    )


def labelled_nodes(
    api: kubernetes.client.ApiClient,
    names: Iterable[str],
    keys: Iterable[str],
    timeout: float = LAUNCH_SECONDS,
) -> dict[str, Mapping[str, str]]:
    """The named Nodes' labels, once each node exists and carries every one of ``keys``."""
    wanted, needed = set(names), set(keys)
    core = kubernetes.client.CoreV1Api(api)

    def current() -> dict[str, Mapping[str, str]]:
        return {
            node.metadata.name: node.metadata.labels or {}
            for node in core.list_node().items
            if node.metadata.name in wanted
        }

    return wait_until(
        current,
        lambda seen: set(seen) == wanted and all(needed <= set(labels) for labels in seen.values()),
        timeout,
        f"nodes {sorted(wanted)} labelled {sorted(needed)}",
        describe=lambda seen: "; ".join(
            f"{name}: {'missing' if name not in seen else sorted(needed - set(seen[name])) or 'labelled'}"
            for name in sorted(wanted)
        ),
    )


def karpenter_nodes(api: kubernetes.client.ApiClient) -> list[kubernetes.client.V1Node]:
    """The Nodes Karpenter launched (labelled with its NodePool)."""
    core = kubernetes.client.CoreV1Api(api)
    nodes: list[kubernetes.client.V1Node] = core.list_node(label_selector=KARPENTER_NODE_POOL_LABEL).items
    return nodes
