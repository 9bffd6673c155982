"""Request bodies written to files for the load generator: realistic EKS GPU nodes (testbed/eks_nodes.py)."""

from pathlib import Path

import orjson

from testbed.eks_nodes import extender_body, make_nodes, make_pod

EXTENDER_VERBS = ("filter", "prioritize")
"""The extender's two verbs every latency measurement runs, in this order."""
FILTER_MIN_MEMORY_MIB = 40960
"""The pod's minimum in the latency runs: half of the fixture's instance types pass (a mid-size answer)."""


def write_body(directory: Path, nodes: int, min_memory_mib: int | None = FILTER_MIN_MEMORY_MIB) -> Path:
    """ExtenderArgs with ``nodes`` realistic nodes and a GPU pod; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"args-{nodes}-{min_memory_mib}.json"
    if not path.exists():
        path.write_bytes(extender_body(make_pod(min_memory_mib=min_memory_mib), make_nodes(nodes)))
    return path


def write_padded_body(directory: Path, nodes: int, target_bytes: int) -> Path:
    """``nodes`` realistic nodes padded with cached-image entries until the body nears ``target_bytes``.

    The pod has no minimum, so every node passes and the filter answer is as large as the body.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"padded-{nodes}-{target_bytes}.json"
    if path.exists():
        return path
    items = make_nodes(nodes)
    pod = make_pod()
    base = len(extender_body(pod, items))
    image = {"names": ["registry.example.com/padding@sha256:" + "0" * 64], "sizeBytes": 123456789}
    per_image = len(orjson.dumps(image)) + 1
    per_node = max(0, (target_bytes - base) // nodes) // per_image
    for node in items:
        node["status"]["images"].extend([image] * per_node)
    path.write_bytes(extender_body(pod, items))
    return path
