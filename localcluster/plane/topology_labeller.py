"""Writes the network-topology labels the AWS cloud-controller-manager writes on EKS.

On EKS the cloud-controller-manager reads an instance's network nodes from EC2
(``DescribeInstanceTopology``) when it initialises a new Node, and labels it
``topology.k8s.aws/network-node-layer-1`` .. ``-3`` (``-4`` on four-layer types); it skips a node
that already carries the layer-1 label, writes nothing for types without topology, and never
changes the labels afterwards. The local cluster has no cloud-controller-manager, so this process
stands in for that part (``python -m localcluster.plane.topology_labeller --kubeconfig PATH``):

- it watches all Nodes; a node it sees for the first time gets its place in the model
  (``localcluster.plane.network_topology``: the zone label, the instance-type label, ``--seed``);
- ``--delay`` seconds after that it labels the node, once, with a patch that carries the node's
  resourceVersion (a concurrent change makes it read the node again, never overwrite);
- a node that already carries a network-node label, or whose type has no topology, is left as it
  is, and so is every node it labelled, whatever happens to its labels later.

Nodes it finds when it starts are placed in order of creation (then name), later ones as the watch
reports them, so a fleet created in one order gets the same labels on every run with the same seed.
It remembers what it labelled only while it runs: a node whose labels were removed is labelled
again, possibly elsewhere, if the labeller is restarted. Each decision is logged as one JSON line.
Nothing else in the project writes these labels.
"""

import argparse
import contextlib
import heapq
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any

import kubernetes.client
import kubernetes.config
import kubernetes.watch
import urllib3.exceptions

from contracts.release import REPO_ROOT
from localcluster.host.processes import ManagedProcess, python_module_argv
from localcluster.plane.control_plane import ControlPlane
from localcluster.plane.network_topology import (
    DEFAULT_TREES,
    NETWORK_NODE_LABEL_PREFIX,
    PLACEMENTS,
    NetworkTopologyModel,
    Placement,
    TopologyError,
    TreeShape,
    topology_labels,
)
from policy.job_zone import ZONE_LABEL
from policy.settings import INSTANCE_TYPE_LABEL

DEFAULT_DELAY_SECONDS = 3.0
"""How long after a node first appears its labels are written (a chosen figure: the
cloud-controller-manager's own lag depends on EC2 and is not measured here)."""
MAX_DELAY_SECONDS = 3600.0
WATCH_SECONDS = 60
"""How long one watch request lasts before the labeller re-lists."""
FIELD_MANAGER = "topology-labeller"
"""The field manager of its patches: a node's managedFields show when and by whom it was labelled."""
RETRY_SECONDS = 1.0
"""How long the labeller waits before it lists again, or tries a node's labels again, after the API
server failed the request (unreachable, or an error other than a conflict)."""
API_FAILURES = (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError)
CONFLICT_ATTEMPTS = 5
"""How often one node's patch is tried again after a conflicting change before it is given up."""


@dataclass(frozen=True)
class TopologyLabelling:
    """The labeller's settings, as a library call or command-line flags."""

    delay_seconds: float = DEFAULT_DELAY_SECONDS
    seed: str = "0"
    trees: tuple[TreeShape, ...] = tuple(DEFAULT_TREES.values())
    placement: Placement = "scatter"

    def __post_init__(self) -> None:
        if not 0 <= self.delay_seconds <= MAX_DELAY_SECONDS:
            raise ValueError(
                f"the labelling delay must be 0..{MAX_DELAY_SECONDS:g} s, not {self.delay_seconds}"
            )
        self.model()  # raises on an invalid placement or two trees of one depth

    def model(self) -> NetworkTopologyModel:
        depths = [shape.layers for shape in self.trees]
        if len(set(depths)) != len(depths):
            raise TopologyError(f"one tree per depth: {', '.join(str(shape) for shape in self.trees)}")
        return NetworkTopologyModel(self.seed, {shape.layers: shape for shape in self.trees}, self.placement)

    def flags(self) -> list[str]:
        return [
            f"--delay={self.delay_seconds}",
            f"--seed={self.seed}",
            *(f"--tree={shape}" for shape in self.trees),
            f"--placement={self.placement}",
        ]


def has_topology_labels(labels: dict[str, str] | None) -> bool:
    """Whether any network-node label is present (then the node is not labelled here)."""
    return any(key.startswith(NETWORK_NODE_LABEL_PREFIX) for key in labels or {})


@dataclass(order=True)
class ScheduledLabels:
    """A node's place, to be written as labels at ``at`` (the labeller's clock)."""

    at: float
    order: int
    """Which node was seen first, among nodes due at the same moment."""
    uid: str = field(compare=False)
    name: str = field(compare=False)
    path: tuple[str, ...] = field(compare=False)


class Labeller:
    """Places nodes as they are seen, and labels each once its delay has passed."""

    def __init__(
        self,
        core: kubernetes.client.CoreV1Api,
        model: NetworkTopologyModel,
        delay_seconds: float,
        log: Callable[[dict[str, Any]], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._core = core
        self._model = model
        self._delay = delay_seconds
        self._log = log
        self._clock = clock
        self._seen: set[str] = set()
        """UIDs of nodes decided on: labelled, left alone, or waiting in ``_due``."""
        self._due: list[ScheduledLabels] = []
        self._changed = threading.Condition()

    def saw(self, node: kubernetes.client.V1Node) -> None:
        """Decide on a node seen for the first time: leave it alone, or place it and schedule its labels."""
        uid, name = node.metadata.uid, node.metadata.name
        labels = node.metadata.labels or {}
        with self._changed:
            if uid in self._seen:
                return
            self._seen.add(uid)
            if has_topology_labels(labels):
                self._log({"msg": "already labelled", "node": name})
                return
            instance_type = labels.get(INSTANCE_TYPE_LABEL, "")
            try:
                path = self._model.place(name, instance_type, labels.get(ZONE_LABEL, ""))
            except TopologyError as full:
                self._log({"msg": "not labelled", "node": name, "reason": str(full)})
                return
            if path is None:
                self._log({"msg": "no topology for this type", "node": name, "instanceType": instance_type})
                return
            due = ScheduledLabels(self._clock() + self._delay, len(self._seen), uid, name, path)
            heapq.heappush(self._due, due)
            self._changed.notify()

    def pop_due(self) -> ScheduledLabels | float | None:
        """The earliest scheduled labelling if it is due (removed from the schedule), else how many
        seconds until it is, or None when nothing is scheduled."""
        with self._changed:
            if not self._due:
                return None
            wait = self._due[0].at - self._clock()
            return heapq.heappop(self._due) if wait <= 0 else wait

    def next_due(self, stop: threading.Event) -> ScheduledLabels | None:
        """Wait until the earliest scheduled labelling is due and return it; None once ``stop`` is set."""
        with self._changed:
            while not stop.is_set():
                due = self.pop_due()
                if isinstance(due, ScheduledLabels):
                    return due
                self._changed.wait(timeout=due)
            return None

    def label(self, due: ScheduledLabels) -> bool:
        """Write the node's labels unless it is gone, was re-created or got network-node labels
        meanwhile; True when this call wrote them."""
        for _ in range(CONFLICT_ATTEMPTS):
            try:
                node = self._core.read_node(due.name)
            except kubernetes.client.ApiException as error:
                if error.status == HTTPStatus.NOT_FOUND:
                    return False
                raise
            if node.metadata.uid != due.uid or has_topology_labels(node.metadata.labels):
                return False
            labels = topology_labels(due.path)
            patch = {"metadata": {"labels": labels, "resourceVersion": node.metadata.resource_version}}
            try:
                self._core.patch_node(due.name, patch, field_manager=FIELD_MANAGER)
            except kubernetes.client.ApiException as error:
                if error.status == HTTPStatus.CONFLICT:
                    continue
                if error.status == HTTPStatus.NOT_FOUND:
                    return False
                raise
            self._log({"msg": "labelled", "node": due.name, "labels": labels})
            return True
        self._log({"msg": "not labelled", "node": due.name, "reason": "kept changing; conflicts"})
        return False

    def attempt(self, due: ScheduledLabels) -> bool:
        """``label``, and when the API server fails it, schedule the node again ``RETRY_SECONDS`` on."""
        try:
            return self.label(due)
        except API_FAILURES as error:
            self._log({"msg": "labelling failed; trying again", "node": due.name, "error": str(error)[:500]})
            with self._changed:
                heapq.heappush(self._due, replace(due, at=self._clock() + RETRY_SECONDS))
                self._changed.notify()
            return False

    def label_until(self, stop: threading.Event) -> None:
        """Label nodes as they fall due until ``stop`` is set."""
        while (due := self.next_due(stop)) is not None:
            self.attempt(due)

    def stop(self, stop: threading.Event) -> None:
        with self._changed:
            stop.set()
            self._changed.notify_all()


def watch_nodes(
    core: kubernetes.client.CoreV1Api, labeller: Labeller, log: Callable[[dict[str, Any]], None]
) -> None:
    """List (oldest first), then watch; list again when a watch ends, expires or fails. Runs until killed."""
    while True:
        try:
            _list_and_watch(core, labeller)
        except API_FAILURES as error:
            if isinstance(error, kubernetes.client.ApiException) and error.status == HTTPStatus.GONE:
                continue  # the resourceVersion expired
            log({"msg": "watch failed; listing again", "error": str(error)[:500]})
            time.sleep(RETRY_SECONDS)


def _list_and_watch(core: kubernetes.client.CoreV1Api, labeller: Labeller) -> None:
    listed = core.list_node()
    for node in sorted(listed.items, key=lambda n: (n.metadata.creation_timestamp, n.metadata.name)):
        labeller.saw(node)
    stream = kubernetes.watch.Watch().stream(
        core.list_node, resource_version=listed.metadata.resource_version, timeout_seconds=WATCH_SECONDS
    )
    for event in stream:
        if event["type"] in ("ADDED", "MODIFIED"):
            labeller.saw(event["object"])


def _print_json(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def run(kubeconfig: str, settings: TopologyLabelling) -> None:
    """Watch in this thread, label in another (each with its own API client). Runs until killed."""
    labeller = Labeller(
        kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=kubeconfig)),
        settings.model(),
        settings.delay_seconds,
        _print_json,
    )
    stop = threading.Event()
    writer = threading.Thread(target=labeller.label_until, args=(stop,), name="labels", daemon=True)
    writer.start()
    try:
        watch_nodes(
            kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=kubeconfig)),
            labeller,
            _print_json,
        )
    finally:
        labeller.stop(stop)


def parse_args(argv: Sequence[str] | None = None) -> tuple[str, TopologyLabelling]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--kubeconfig", required=True, help="a kubeconfig allowed to get, list, watch and patch Nodes"
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=DEFAULT_DELAY_SECONDS,
        help=f"seconds from a node's first appearance to its labels, 0..{MAX_DELAY_SECONDS:g} "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--seed", default="0", help="what the network-node ids and the placement are drawn from"
    )
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="SHAPE",
        help="a tree shape per depth, e.g. 2x4x8x4 (3 layers of 2, 4, 8 nodes, 4 instances under each "
        "bottom node); repeat for 3 and 4 layers (default "
        f"{' '.join(str(shape) for shape in DEFAULT_TREES.values())})",
    )
    parser.add_argument("--placement", choices=PLACEMENTS, default="scatter", help="(default %(default)s)")
    args = parser.parse_args(argv)
    try:
        trees = dict(DEFAULT_TREES)
        for text in args.tree:
            shape = TreeShape.parse(text)
            trees[shape.layers] = shape
        settings = TopologyLabelling(args.delay, args.seed, tuple(trees.values()), args.placement)
    except ValueError as invalid:
        parser.error(str(invalid))
    return args.kubeconfig, settings


def main(argv: Sequence[str] | None = None) -> int:
    kubeconfig, settings = parse_args(argv)
    _print_json({"msg": "watching nodes", "settings": settings.flags(), "started": time.time()})
    run(kubeconfig, settings)
    return 0


@contextlib.contextmanager
def running_topology_labeller(
    plane: ControlPlane, settings: TopologyLabelling | None = None
) -> Iterator[ManagedProcess]:
    """The labeller as a child of the control plane's process group, stopped on exit."""
    process = plane.processes.start(
        "topology-labeller",
        python_module_argv(
            "localcluster.plane.topology_labeller",
            f"--kubeconfig={plane.kubeconfig}",
            *(settings or TopologyLabelling()).flags(),
        ),
        cwd=REPO_ROOT,
    )
    try:
        yield process
    finally:
        process.stop()
        plane.processes.forget(process)


if __name__ == "__main__":
    sys.exit(main())
