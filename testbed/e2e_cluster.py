"""A fresh local cluster per test, and the few operations the e2e tests share."""

import contextlib
import dataclasses
import http.client
import json
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes.client

from contracts.modes import SchedulerMode, uses_extender
from localcluster.host.images import LocalImages
from localcluster.host.pki import CertFiles
from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.inventory import InstanceType, load_inventory
from localcluster.plane.nodes import SimulatedNode, create_nodes
from localcluster.plane.outcomes import PodOutcome, wait_for_outcome, wait_for_outcomes
from localcluster.plane.topology_labeller import TopologyLabelling, running_topology_labeller
from localcluster.plane.workloads import (
    WORKLOAD_NAMESPACE,
    PodSpecification,
    ensure_namespace,
    pod_manifest,
    restricted_namespace_labels,
    submit_pods,
)
from localcluster.services.custom_scheduler import (
    ExtenderTLS,
    LocalScheduler,
    RunningExtender,
    extender_tls,
    grant_scheduler_rbac,
    start_extender_for,
    start_scheduler,
)
from policy import NODE_MEMORY_LABEL
from render.policy_choices import DEFAULT_POLICY_CHOICES, PolicyChoices

INVENTORY = load_inventory()


def shaped_like(base: str, gpu_memory_mib: int, gpu_count: int = 1) -> InstanceType:
    """An instance type with ``base``'s CPU and memory, and the given GPUs (to isolate one variable)."""
    return dataclasses.replace(INVENTORY[base], gpu_memory_mib=gpu_memory_mib, gpu_count=gpu_count)


@dataclass
class E2ECluster:
    """A control plane with the workload namespace, the Lease RBAC, nodes and a custom scheduler."""

    plane: ControlPlane
    bin_dir: Path
    mode: SchedulerMode
    api: kubernetes.client.ApiClient
    tls: ExtenderTLS | None = None
    extender: RunningExtender | None = None
    scheduler: LocalScheduler | None = None
    nodes: dict[str, SimulatedNode] = field(default_factory=dict)
    images: LocalImages | None = None
    """Run the scheduler (plugin mode) from the built gpu-scheduler image instead of the binary."""

    def add_nodes(self, *nodes: SimulatedNode) -> None:
        create_nodes(self.api, list(nodes))
        self.nodes.update({node.name: node for node in nodes})

    def start(
        self,
        verbosity: int = 2,
        extender_args: tuple[str, ...] = (),
        extender_api_server: str = "",
        choices: PolicyChoices | None = None,
        client_qps: int | None = None,
        *,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> LocalScheduler:
        """Start the extender (extender modes) and the scheduler.

        ``choices``: the stack's policy choices, as the mode takes them (plugin args or the
        extender's flags), as the stack renders them; None: the stack's defaults (which include
        the EC2 GPU table the extender's own defaults lack). ``client_qps``: the scheduler's client
        QPS and burst; None = kube-scheduler's default 50/100. ``feature_gates``: kube-scheduler
        feature gates set otherwise than their default."""
        choices = choices or DEFAULT_POLICY_CHOICES
        if uses_extender(self.mode):
            self.start_extender((*extender_args, *choices.extender_flags()), extender_api_server)
        return self.start_scheduler(verbosity, choices, client_qps, feature_gates=feature_gates)

    def start_extender(
        self, extra_args: tuple[str, ...] = (), api_server: str = "", *, wait_ready: bool = True
    ) -> RunningExtender:
        """The extender as this mode runs it; ``api_server`` reroutes its node cache (a test proxy)."""
        self.tls = extender_tls(self.plane.work_dir)
        self.extender = start_extender_for(
            self.plane, self.mode, self.tls, extra_args, api_server=api_server, wait_ready=wait_ready
        )
        return self.extender

    def start_scheduler(
        self,
        verbosity: int = 2,
        choices: PolicyChoices = DEFAULT_POLICY_CHOICES,
        client_qps: int | None = None,
        *,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> LocalScheduler:
        self.scheduler = start_scheduler(
            self.plane,
            self.bin_dir,
            self.mode,
            extender=self.extender,
            client_tls=self.tls.client if self.tls else None,
            extender_ca=self.tls.ca.ca_file if self.tls else None,
            verbosity=verbosity,
            images=self.images,
            choices=choices,
            client_qps=client_qps,
            feature_gates=feature_gates,
        )
        return self.scheduler

    def restart_scheduler(self, client_tls: CertFiles, extender_ca: Path, config_name: str) -> LocalScheduler:
        """Replace the running scheduler by one with other TLS material for the extender."""
        assert self.scheduler is not None
        self.scheduler.process.stop()
        self.plane.processes.forget(self.scheduler.process)
        self.scheduler = start_scheduler(
            self.plane,
            self.bin_dir,
            self.mode,
            extender=self.extender,
            client_tls=client_tls,
            extender_ca=extender_ca,
            config_name=config_name,
        )
        return self.scheduler

    def submit(self, *specs: PodSpecification) -> list[str]:
        submit_pods(self.api, list(specs))
        return [spec.name for spec in specs]

    def outcomes(
        self, names: list[str], *, bound_only: bool = False, timeout: float = 120
    ) -> dict[str, PodOutcome]:
        return wait_for_outcomes(self.api, WORKLOAD_NAMESPACE, names, timeout, bound_only=bound_only)

    def outcome(self, name: str, *, bound_only: bool = False) -> PodOutcome:
        return self.outcomes([name], bound_only=bound_only)[name]

    def outcome_where(
        self, name: str, holds: Callable[[PodOutcome], bool], expected: str, timeout: float = 120
    ) -> PodOutcome:
        """The pod's verdict once it satisfies ``holds`` (a Pending pod's condition is rewritten on
        every attempt, and an attempt may run before the scheduler has seen every node)."""
        return wait_for_outcome(self.api, WORKLOAD_NAMESPACE, name, holds, expected=expected, timeout=timeout)

    def label_of(self, node_name: str) -> int:
        node = kubernetes.client.CoreV1Api(self.api).read_node(node_name)
        return int(node.metadata.labels.get(NODE_MEMORY_LABEL, "0"))

    def pod(self, name: str) -> kubernetes.client.V1Pod:
        return kubernetes.client.CoreV1Api(self.api).read_namespaced_pod(name, WORKLOAD_NAMESPACE)

    def cached_filter(self, minimum_mib: int, *node_names: str) -> dict[str, Any]:
        """Ask the running extender-cached extender directly (names only, as the scheduler does).

        Tests use it to see what the extender's node cache holds now, e.g. to wait until it has
        seen a change before they submit the pod that depends on it.
        """
        assert self.mode == "extender-cached"
        assert self.extender is not None
        assert self.tls is not None
        context = ssl.create_default_context(cafile=str(self.tls.ca.ca_file))
        context.load_cert_chain(str(self.tls.client.cert), str(self.tls.client.key))
        pod = pod_manifest(PodSpecification("probe", min_memory=str(minimum_mib)))
        body = json.dumps({"Pod": pod, "Nodes": None, "NodeNames": list(node_names)})
        connection = http.client.HTTPSConnection(LOOPBACK, self.extender.port, context=context, timeout=5)
        try:
            connection.request("POST", "/filter", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            assert response.status == 200, response.read()
            answer: dict[str, Any] = json.loads(response.read())
            return answer
        finally:
            connection.close()

    def extender_passes(self, minimum_mib: int, node_name: str) -> bool:
        """Whether the extender-cached extender would pass ``node_name`` for that minimum now."""
        passed = self.cached_filter(minimum_mib, node_name).get("NodeNames")
        return isinstance(passed, list) and node_name in passed


@contextlib.contextmanager
def e2e_cluster(
    bin_dir: Path, work_dir: Path, mode: SchedulerMode, topology: TopologyLabelling | None = None
) -> Iterator[E2ECluster]:
    """Everything but the scheduler; the test adds nodes and calls ``start``. The topology labeller
    runs throughout (``topology``: its settings; None: its defaults), as the cloud-controller-manager
    does on EKS."""
    with start_control_plane(bin_dir, work_dir) as plane, running_topology_labeller(plane, topology):
        api = plane.api_client()
        ensure_namespace(api, WORKLOAD_NAMESPACE, restricted_namespace_labels())
        grant_scheduler_rbac(plane)
        yield E2ECluster(plane=plane, bin_dir=bin_dir, mode=mode, api=api)
