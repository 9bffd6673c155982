"""POST /preempt: preemption that follows priority, breaking a job only when nothing else makes room.

The rule is ``policy.job_preemption``: every candidate node whose victims could be read is kept
with its victims unchanged (a higher priority always gets in), and each victim whose same-zone job
has members outside the node's victims counts as one PodDisruptionBudget violation in the answer.
kube-scheduler ranks candidates by violations first, so it prefers a node whose victims break no
job and breaks one only when every other node costs as many violations.

Without a node cache the scheduler sends the victim Pods themselves. With ``--node-cache watch``
it sends only their UIDs and the extender keeps no pods, so it lists the pods of each candidate
node (``spec.nodeName`` field selector, metadata only) when, and only when, the scheduler
preempts: preemption is rare, while a pod informer would hold every pod of the cluster in memory
all the time. The lists run at most ``--node-lookup-concurrency`` at once and all within
``--node-lookup-timeout``; a node whose pods cannot be read in time is dropped (its victims might
break a job), and the scheduler tries the pod again later.
"""

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from extender_app.node_cache.lookup import PodLister
from extender_app.verbs.handlers import AsyncVerbHandler, VerbHandler, VerbLimits, VerbResult
from extender_app.verbs.wire import WireError
from extender_app.verbs.wire_preempt import PreemptArgs, encode_preempt_result, parse_preempt_args
from policy.job_preemption import pod_priority, preempt_candidates


def preempt_verb(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
    """POST /preempt with full victim Pods (``nodeCacheCapable: false``)."""
    try:
        args = parse_preempt_args(body, limits.max_nodes, meta=False)
    except WireError as error:
        return VerbResult(error.status, error.reason.encode())
    victims = {name: node.pods for name, node in args.nodes.items()}
    return _answer(args, victims, limits)


@dataclass(frozen=True)
class PodListing:
    """How ``/preempt`` reads candidate nodes' pods with a node cache."""

    lister: PodLister
    timeout: float
    """Seconds all the lists of one request may take (``--node-lookup-timeout``)."""
    gate: asyncio.Semaphore
    """Lists in flight across all requests (``--node-lookup-concurrency``)."""
    log: logging.Logger


def listing_preempt_verb(listing: PodListing) -> AsyncVerbHandler:
    """POST /preempt with victims as UIDs (``nodeCacheCapable: true``): their pods read from the API
    server, node by node."""

    async def preempt(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        try:
            args = parse_preempt_args(body, limits.max_nodes, meta=True)
        except WireError as error:
            return VerbResult(error.status, error.reason.encode())
        victims = await _read_victims(args, listing)
        return _answer(args, victims, limits)

    return preempt


def without_lister_preempt_verb() -> VerbHandler:
    """POST /preempt with a node cache but no pod lists (``--node-lookup-concurrency 0``): every
    candidate with victims is dropped, since none of them can be read."""

    def preempt(body: bytes | bytearray, limits: VerbLimits) -> VerbResult:
        try:
            args = parse_preempt_args(body, limits.max_nodes, meta=True)
        except WireError as error:
            return VerbResult(error.status, error.reason.encode())
        return _answer(args, {}, limits)

    return preempt


async def _read_victims(args: PreemptArgs, listing: PodListing) -> dict[str, Sequence[Mapping[str, Any]]]:
    """Each candidate's victims as pods, for the nodes whose pods were read in time."""

    async def read(name: str) -> tuple[str, Sequence[Mapping[str, Any]]]:
        wanted = set(args.nodes[name].uids)
        async with listing.gate:
            pods = await listing.lister.pods_on_node(name, listing.timeout)
        return name, [pod for pod in pods if _uid(pod) in wanted]

    tasks = [asyncio.ensure_future(read(name)) for name in args.nodes if args.nodes[name].uids]
    read_nodes: dict[str, Sequence[Mapping[str, Any]]] = {n: [] for n in args.nodes if not args.nodes[n].uids}
    if not tasks:
        return read_nodes
    done, pending = await asyncio.wait(tasks, timeout=listing.timeout)
    for task in pending:
        task.cancel()
    failed = len(pending)
    for task in done:
        error = task.exception()
        if error is not None:
            failed += 1
            listing.log.warning(
                "preempt: a candidate node's pods could not be read", extra={"fields": {"error": str(error)}}
            )
            continue
        name, pods = task.result()
        read_nodes[name] = pods
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    if failed:
        listing.log.warning(
            "preempt: candidate nodes dropped, their pods unread", extra={"fields": {"nodes": failed}}
        )
    return read_nodes


def _uid(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    return uid if isinstance(uid, str) else ""


def _answer(
    args: PreemptArgs, victims: Mapping[str, Sequence[Mapping[str, Any]]], limits: VerbLimits
) -> VerbResult:
    def violations(name: str) -> int:
        return args.nodes[name].pdb_violations

    kept = preempt_candidates(args.names, victims.get, violations, pod_priority(args.pod), limits.job_zone)
    metadata = args.pod.get("metadata")
    pod = ""
    if isinstance(metadata, Mapping):
        pod = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
    return VerbResult(
        HTTPStatus.OK,
        encode_preempt_result(args, {candidate.name: candidate.violations for candidate in kept}),
        pod=pod,
        candidates=len(args.nodes),
        passed=len(kept),
    )
