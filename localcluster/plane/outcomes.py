"""Where each pod went, or why the scheduler left it Pending."""

from collections.abc import Iterable
from dataclasses import dataclass

import kubernetes.client

from localcluster.host.waiting import wait_for

OUTCOME_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class PodOutcome:
    """A pod's scheduling result: bound to ``node``, or Pending with the scheduler's reason."""

    name: str
    node: str | None
    reason: str = ""
    message: str = ""

    @property
    def bound(self) -> bool:
        return self.node is not None


def outcome_of(pod: kubernetes.client.V1Pod) -> PodOutcome | None:
    """The outcome so far; None while the scheduler has not yet said anything."""
    name = pod.metadata.name
    if pod.spec.node_name:
        return PodOutcome(name=name, node=pod.spec.node_name)
    for condition in (pod.status and pod.status.conditions) or ():
        if condition.type == "PodScheduled" and condition.status == "False":
            return PodOutcome(
                name=name, node=None, reason=condition.reason or "", message=condition.message or ""
            )
    return None


def read_outcomes(
    api: kubernetes.client.ApiClient, namespace: str, names: Iterable[str]
) -> dict[str, PodOutcome]:
    """Outcomes of the named pods that have one."""
    wanted = set(names)
    pods = kubernetes.client.CoreV1Api(api).list_namespaced_pod(namespace).items
    outcomes = {}
    for pod in pods:
        if pod.metadata.name in wanted and (outcome := outcome_of(pod)) is not None:
            outcomes[pod.metadata.name] = outcome
    return outcomes


def wait_for_outcomes(
    api: kubernetes.client.ApiClient,
    namespace: str,
    names: Iterable[str],
    timeout: float = OUTCOME_TIMEOUT_SECONDS,
    *,
    bound_only: bool = False,
) -> dict[str, PodOutcome]:
    """Wait until every named pod is bound (or, unless ``bound_only``, has a Pending verdict)."""
    wanted = list(names)

    def settled() -> dict[str, PodOutcome] | None:
        outcomes = read_outcomes(api, namespace, wanted)
        if bound_only:
            outcomes = {name: outcome for name, outcome in outcomes.items() if outcome.bound}
        return outcomes if len(outcomes) == len(wanted) else None

    what = "every pod to be bound" if bound_only else "a scheduling outcome for every pod"
    return wait_for(settled, timeout, what, interval=0.2)
