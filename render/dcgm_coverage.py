"""Where the add-on's DCGM exporter runs: the chart's node affinity kept whole, with every GPU
instance type the stack can launch added beside the chart's own.

The ``amazon-cloudwatch-observability`` chart runs its DCGM exporter only on nodes its
``dcgmExporter.affinity`` admits: an instance type in a fixed list, and not on Fargate. A GPU
node of a type missing from the list reports no GPU metrics. A Helm value is replaced, not
merged, so the stack passes the chart's whole affinity (``dcgm_affinity.json``, copied from the
chart at the add-on version the stack pins), its instance-type list extended with the stack's
types it lacks, every other term and expression (the Fargate exclusion) as the chart has it. Pure.
"""

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from policy import INSTANCE_TYPE_LABEL

CHART_AFFINITY_FILE = Path(__file__).with_name("dcgm_affinity.json")


def chart_affinity(path: Path = CHART_AFFINITY_FILE) -> dict[str, Any]:
    """The chart's ``dcgmExporter.affinity`` at the pinned version."""
    affinity: dict[str, Any] = json.loads(path.read_text())["affinity"]
    return affinity


def _terms(affinity: dict[str, Any]) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    return terms


def _instance_type_lists(affinity: dict[str, Any]) -> list[list[str]]:
    return [
        expression["values"]
        for term in _terms(affinity)
        for expression in term["matchExpressions"]
        if expression["key"] == INSTANCE_TYPE_LABEL and expression["operator"] == "In"
    ]


def chart_allow_list() -> tuple[str, ...]:
    """The instance types the chart's affinity lists."""
    return tuple(name for values in _instance_type_lists(chart_affinity()) for name in values)


def missing_from_chart(instance_types: Iterable[str]) -> list[str]:
    """The stack's GPU instance types the chart's list lacks, in first-seen order."""
    listed = chart_allow_list()
    return list(dict.fromkeys(name for name in instance_types if name not in listed))


def dcgm_affinity(instance_types: Iterable[str]) -> dict[str, Any]:
    """The ``dcgmExporter.affinity`` value: the chart's, with ``instance_types`` it lacks added to
    each of its instance-type lists."""
    affinity = copy.deepcopy(chart_affinity())
    added = missing_from_chart(instance_types)
    for values in _instance_type_lists(affinity):
        values.extend(added)
    return affinity


def dcgm_instance_types(affinity: dict[str, Any]) -> set[str]:
    """The instance types a ``dcgmExporter.affinity`` value admits (the reading a test does)."""
    return {name for values in _instance_type_lists(affinity) for name in values}
