"""Where each pod went, or why the scheduler left it Pending."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import kubernetes.client

from localcluster.host.waiting import wait_until

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

    def settled(outcomes: dict[str, PodOutcome]) -> bool:
        return all(name in outcomes and (outcomes[name].bound or not bound_only) for name in wanted)

    def unsettled(outcomes: dict[str, PodOutcome]) -> str:
        return "; ".join(
            f"{name}: {describe(outcomes.get(name))}"
            for name in wanted
            if name not in outcomes or (bound_only and not outcomes[name].bound)
        )

    what = "every pod to be bound" if bound_only else "a scheduling outcome for every pod"
    return wait_until(
        lambda: read_outcomes(api, namespace, wanted),
        settled,
        timeout,
        what,
        describe=unsettled,
        interval=0.2,
    )


def wait_for_outcome(
    api: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    holds: Callable[[PodOutcome], bool],
    *,
    expected: str,
    timeout: float = OUTCOME_TIMEOUT_SECONDS,
) -> PodOutcome:
    """Wait until the pod's verdict satisfies ``holds``: a scheduler rewrites a Pending pod's
    condition on every attempt, so a first verdict read once may be one it is about to replace."""

    def current() -> PodOutcome | None:
        return read_outcomes(api, namespace, [name]).get(name)

    outcome = wait_until(
        current,
        lambda seen: seen is not None and holds(seen),
        timeout,
        f"{namespace}/{name}: {expected}",
        describe=describe,
        interval=0.2,
    )
    assert outcome is not None
    return outcome


def describe(outcome: PodOutcome | None) -> str:
    """A verdict in a few words: where the pod is bound, or why it waits."""
    if outcome is None:
        return "no verdict yet"
    if outcome.bound:
        return f"bound to {outcome.node}"
    return f"Pending ({outcome.reason}: {outcome.message})"
