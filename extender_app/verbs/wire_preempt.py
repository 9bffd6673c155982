"""The preempt verb's wire format, as kube-scheduler 1.35 speaks it.

``HTTPExtender.ProcessPreemption`` (``pkg/scheduler/extender.go``) sends an
``ExtenderPreemptionArgs``: the preemptor as ``Pod`` and, for each candidate node, the victims its
dry run chose. Without a node cache they are full Pods
(``{"NodeNameToVictims": {"n1": {"Pods": [...], "NumPDBViolations": 0}}}``); with
``nodeCacheCapable: true`` only their UIDs
(``{"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "..."}], "NumPDBViolations": 0}}}``). The
answer is an ``ExtenderPreemptionResult``: the nodes kept, each with its victims as UIDs and its
``NumPDBViolations`` (``NodeNameToMetaVictims``), which the scheduler reads back and ranks nodes by
first; it refuses a node without victims or a UID not on the node.

Keys are matched as Go's decoder matches them; at most ``--max-nodes`` candidates.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import orjson
from msgspec import Raw

from extender_app.verbs.wire import ARGS_POD, WireError, check_utf8, decode_object, go_fields, read_pod

ARGS_VICTIMS = "NodeNameToVictims"
ARGS_META_VICTIMS = "NodeNameToMetaVictims"
VICTIMS_PODS = "Pods"
VICTIMS_PDB_VIOLATIONS = "NumPDBViolations"
META_POD_UID = "UID"

VICTIMS_REFUSED = (
    f"{ARGS_VICTIMS} must be absent or null: the extender runs with --node-cache watch; configure it with"
    " nodeCacheCapable: true"
)
META_VICTIMS_REFUSED = (
    f"{ARGS_META_VICTIMS} must be absent or null: configure the extender with nodeCacheCapable: false"
)


@dataclass(frozen=True)
class NodeVictims:
    """One candidate node's victims as the scheduler chose them."""

    uids: tuple[str, ...]
    pods: tuple[Mapping[str, Any], ...]
    """The victim Pods (full Pods without a node cache; empty with one: only UIDs are sent)."""
    pdb_violations: int


@dataclass(frozen=True)
class PreemptArgs:
    """A parsed ``ExtenderPreemptionArgs``."""

    pod: Mapping[str, Any]
    nodes: Mapping[str, NodeVictims]
    """Candidate node name -> its victims, in the order received."""

    @property
    def names(self) -> Sequence[str]:
        """The candidate nodes' names."""
        return tuple(self.nodes)


def parse_preempt_args(body: bytes | bytearray, max_nodes: int, meta: bool) -> PreemptArgs:
    """The request, with full victim Pods (``meta`` False) or their UIDs only (``meta`` True).

    Raises WireError (400, or 413 past ``max_nodes``) with a one-line reason.
    """
    check_utf8(body)
    fields = go_fields(
        decode_object(body), (ARGS_POD, ARGS_VICTIMS, ARGS_META_VICTIMS), "ExtenderPreemptionArgs"
    )
    pod = read_pod(fields.get(ARGS_POD))
    wanted, other = (ARGS_META_VICTIMS, ARGS_VICTIMS) if meta else (ARGS_VICTIMS, ARGS_META_VICTIMS)
    if _load(fields.get(other), other) is not None:
        raise WireError(HTTPStatus.BAD_REQUEST, VICTIMS_REFUSED if meta else META_VICTIMS_REFUSED)
    victims = _load(fields.get(wanted), wanted)
    if victims is None:
        victims = {}
    if not isinstance(victims, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, f"{wanted} must be an object of node name to victims")
    if len(victims) > max_nodes:
        raise WireError(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"{len(victims)} candidate nodes exceed --max-nodes {max_nodes}",
        )
    nodes = {}
    for name, value in victims.items():
        if not name:
            raise WireError(HTTPStatus.BAD_REQUEST, f"{wanted} has an empty node name")
        nodes[name] = _node_victims(name, value, meta)
    return PreemptArgs(pod, nodes)


def encode_preempt_result(args: PreemptArgs, kept: Mapping[str, int]) -> bytes:
    """``ExtenderPreemptionResult``: the kept nodes (name -> its disruption-budget violations, as
    the extender counts them) with their victims unchanged, as UIDs."""
    return orjson.dumps(
        {
            ARGS_META_VICTIMS: {
                name: {
                    VICTIMS_PODS: [{META_POD_UID: uid} for uid in args.nodes[name].uids],
                    VICTIMS_PDB_VIOLATIONS: violations,
                }
                for name, violations in kept.items()
            }
        }
    )


def _load(raw: Raw | None, where: str) -> Any:
    if raw is None:
        return None
    try:
        return orjson.loads(bytes(raw))
    except orjson.JSONDecodeError as error:
        raise WireError(HTTPStatus.BAD_REQUEST, f"{where} could not be read: {error}") from None


def _node_victims(name: str, value: object, meta: bool) -> NodeVictims:
    where = f"victims of node {name}"
    if not isinstance(value, dict):
        raise WireError(HTTPStatus.BAD_REQUEST, f"{where} must be an object")
    fields = _go_keys(value, (VICTIMS_PODS, VICTIMS_PDB_VIOLATIONS), where)
    pods = fields.get(VICTIMS_PODS) or []
    violations = fields.get(VICTIMS_PDB_VIOLATIONS) or 0
    if not isinstance(pods, list):
        raise WireError(HTTPStatus.BAD_REQUEST, f"{where}: {VICTIMS_PODS} must be a list")
    if isinstance(violations, bool) or not isinstance(violations, int):
        raise WireError(HTTPStatus.BAD_REQUEST, f"{where}: {VICTIMS_PDB_VIOLATIONS} must be an integer")
    uids = []
    for pod in pods:
        uid = _uid(pod, meta)
        if not uid:
            raise WireError(HTTPStatus.BAD_REQUEST, f"{where}: every victim needs a non-empty UID")
        uids.append(uid)
    return NodeVictims(tuple(uids), () if meta else tuple(pods), violations)


def _uid(pod: object, meta: bool) -> str:
    if not isinstance(pod, dict):
        return ""
    if meta:
        uid = _go_keys(pod, (META_POD_UID,), "victim").get(META_POD_UID)
    else:
        metadata = _go_keys(pod, ("metadata",), "victim").get("metadata")
        uid = (
            _go_keys(metadata, ("uid",), "victim metadata").get("uid") if isinstance(metadata, dict) else None
        )
    return uid if isinstance(uid, str) else ""


def _go_keys(obj: Mapping[str, Any], names: tuple[str, ...], where: str) -> dict[str, Any]:
    """``go_fields`` over decoded values."""
    return go_fields(obj, names, where)
