"""Where the add-on's DCGM exporter runs: the chart's allow-list of instance types, extended with
every GPU instance type the stack can launch.

The ``amazon-cloudwatch-observability`` chart runs its DCGM exporter only on nodes whose
``node.kubernetes.io/instance-type`` is in a fixed list (``dcgmExporter.affinity``). A GPU node
of a type missing from it reports no GPU metrics. A list in Helm values is replaced, not merged,
so the stack passes the whole list: the chart's own (``dcgm_instance_types.json``, copied from the
chart at the add-on version the stack pins) followed by the stack's types it lacks. Pure.
"""

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHART_ALLOW_LIST_FILE = Path(__file__).with_name("dcgm_instance_types.json")


def chart_allow_list(path: Path = CHART_ALLOW_LIST_FILE) -> tuple[str, tuple[str, ...]]:
    """(node label key, instance types) of the chart's DCGM exporter affinity."""
    document = json.loads(path.read_text())
    return document["labelKey"], tuple(document["instanceTypes"])


def missing_from_chart(instance_types: Iterable[str]) -> list[str]:
    """The stack's GPU instance types the chart's list lacks, in first-seen order."""
    _, listed = chart_allow_list()
    return list(dict.fromkeys(name for name in instance_types if name not in listed))


def dcgm_affinity(instance_types: Iterable[str]) -> dict[str, Any]:
    """The ``dcgmExporter.affinity`` value: the chart's list plus ``instance_types`` it lacks."""
    label_key, listed = chart_allow_list()
    values = [*listed, *missing_from_chart(instance_types)]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": label_key, "operator": "In", "values": values}]}
                ]
            }
        }
    }


def dcgm_instance_types(affinity: dict[str, Any]) -> set[str]:
    """The instance types a ``dcgmExporter.affinity`` value admits (the reading a test does)."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    admitted: set[str] = set()
    for term in terms:
        for expression in term["matchExpressions"]:
            if expression["key"] == "node.kubernetes.io/instance-type" and expression["operator"] == "In":
                admitted.update(expression["values"])
    return admitted
