"""What a preview would change, from the engine's step events (the engine itself, the project
and the stack's configuration are ``localcluster.services.pulumi_stack``'s, shared with ``make demo``)."""

from typing import Any

from pulumi import automation as auto

UNCHANGED = (auto.OpType.SAME, auto.OpType.READ, auto.OpType.REFRESH)
"""Steps that change nothing in the cluster (a refresh step only reads the live object)."""


def changed_steps(events: list[auto.EngineEvent]) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> {op, diffs, detailed_diff} of every resource a preview would touch,
    from the engine's step events (what ``pulumi preview --json`` prints as its steps)."""
    steps: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        pre = event.resource_pre_event
        if pre is None or pre.metadata.op in UNCHANGED:
            continue
        metadata = pre.metadata
        name = metadata.urn.rsplit("::", 1)[1]
        step = steps.setdefault((metadata.type, name), {"ops": [], "diffs": set(), "detailed_diff": {}})
        step["ops"].append(metadata.op.value)
        step["diffs"].update(metadata.diffs or ())
        step["detailed_diff"].update(metadata.detailed_diff or {})
    return steps
