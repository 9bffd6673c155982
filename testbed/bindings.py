"""Watching a namespace's pods for the two moments a same-zone job is judged by: a pod held for
a node (``status.nominatedNodeName``, which kube-scheduler sets while a Permit plugin holds it)
and a pod bound (``spec.nodeName``, written by the Binding)."""

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import kubernetes.client
import kubernetes.watch
from kubernetes.client.rest import ApiException

from localcluster.host.waiting import wait_for

BINDING_WATCH_SECONDS = 5
"""Each watch request's server-side timeout; the watcher reopens it until stopped."""


@dataclass(frozen=True)
class PodEvent:
    """What happened to a pod, on which node, and when (``time.monotonic``)."""

    pod: str
    kind: str
    """``held`` (nominated while waiting at Permit), ``released`` (no longer nominated, not
    bound: rejected) or ``bound``."""
    node: str
    at: float


@dataclass
class _Hold:
    """A pod's last nomination: the node, its PodScheduled=False message then, whether still held."""

    node: str
    refusal: str
    active: bool = True


@dataclass
class BindingWatch:
    """Every hold, release and binding of the namespace's pods from ``start`` on, in order."""

    api: kubernetes.client.ApiClient
    namespace: str
    events: list[PodEvent] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def start(self) -> "BindingWatch":
        self._thread = threading.Thread(target=self._run, name="binding-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(BINDING_WATCH_SECONDS + 5)

    def snapshot(self) -> list[PodEvent]:
        with self._lock:
            return list(self.events)

    def bindings(self) -> dict[str, str]:
        """Pod name -> the node it was bound to."""
        return {event.pod: event.node for event in self.snapshot() if event.kind == "bound"}

    def wait_for_bindings(self, names: Iterable[str], timeout: float = 30) -> dict[str, str]:
        """The nodes ``names`` are bound to, once the watch has seen each of them bound (the API
        may have shown it earlier: the watch delivers events a little later than a list)."""
        wanted = set(names)
        wait_for(lambda: wanted <= set(self.bindings()), timeout, f"the watch to see {sorted(wanted)} bound")
        bindings = self.bindings()
        return {name: bindings[name] for name in wanted}

    def _run(self) -> None:
        core = kubernetes.client.CoreV1Api(self.api)
        held: dict[str, _Hold] = {}
        bound: set[str] = set()
        version = core.list_namespaced_pod(self.namespace).metadata.resource_version
        while not self._stop.is_set():
            watch = kubernetes.watch.Watch()
            try:
                for change in watch.stream(
                    core.list_namespaced_pod,
                    self.namespace,
                    resource_version=version,
                    timeout_seconds=BINDING_WATCH_SECONDS,
                ):
                    pod = change["object"]
                    version = pod.metadata.resource_version
                    self._observe(pod, held, bound)
                    if self._stop.is_set():
                        watch.stop()
            except ApiException:
                # The watch's resourceVersion expired: list again (what changed meanwhile is seen
                # in the list, with the list's time) and watch from there.
                listed = core.list_namespaced_pod(self.namespace)
                for pod in listed.items:
                    self._observe(pod, held, bound)
                version = listed.metadata.resource_version

    def _observe(self, pod: kubernetes.client.V1Pod, held: dict[str, _Hold], bound: set[str]) -> None:
        """A nomination for a node the pod was not held on holds it; a new PodScheduled=False
        message (the Permit rejection), or a binding to another node, releases it.
        kube-scheduler leaves a rejected pod's nomination in place, so a second hold on the same
        node is not seen (undercounted)."""
        name, now = pod.metadata.name, time.monotonic()
        nominated = (pod.status and pod.status.nominated_node_name) or ""
        refusal = unschedulable_message(pod)
        found: list[PodEvent] = []
        hold = held.get(name)
        if pod.spec.node_name:
            if hold is not None and hold.active and hold.node != pod.spec.node_name:
                # Bound elsewhere, so released from its hold, even when the watch saw no new
                # PodScheduled=False message for the rejection (seen once under load: a member
                # held on one node went straight to bound on another).
                hold.active = False
                found.append(PodEvent(name, "released", hold.node, now))
            if name not in bound:
                bound.add(name)
                found.append(PodEvent(name, "bound", pod.spec.node_name, now))
        elif nominated and (hold is None or hold.node != nominated):
            if hold is not None and hold.active:
                found.append(PodEvent(name, "released", hold.node, now))
            held[name] = _Hold(nominated, refusal)
            found.append(PodEvent(name, "held", nominated, now))
        elif hold is not None and hold.active and refusal != hold.refusal:
            hold.active = False
            found.append(PodEvent(name, "released", hold.node, now))
        with self._lock:
            self.events.extend(found)


def unschedulable_message(pod: kubernetes.client.V1Pod) -> str:
    """The message of the pod's PodScheduled=False condition, '' when it has none."""
    for condition in (pod.status and pod.status.conditions) or ():
        if condition.type == "PodScheduled" and condition.status == "False":
            return str(condition.message or condition.reason or "unschedulable")
    return ""


def gpu_seconds_held(events: list[PodEvent], gpus_per_pod: int) -> float:
    """GPU-seconds the pods spent held at Permit (from each hold to its release or binding)."""
    total, since = 0.0, {}
    for event in events:
        if event.kind == "held":
            since[event.pod] = event.at
        elif event.pod in since:
            total += gpus_per_pod * (event.at - since.pop(event.pod))
    return total
