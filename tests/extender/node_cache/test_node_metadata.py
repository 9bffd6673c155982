"""Reading Nodes' metadata from the API server's JSON: list pages, watch events, what is kept."""

import orjson
import pytest

from extender_app.node_cache.metadata import (
    BOOKMARK,
    DELETED,
    ERROR,
    MODIFIED,
    NodeDecodeError,
    NodeMeta,
    event_from_json,
    node_from_json,
    page_from_json,
)
from extender_app.node_labels import node_memory
from policy import (
    DEFAULT_SETTINGS,
    GFD_GPU_MEMORY_LABEL,
    INVALID_MEMORY_LABEL,
    NODE_BEING_REMOVED,
    NODE_MEMORY_LABEL,
    NodeCapacity,
    NodeMemory,
    fits_capacity_type,
    memory_labels,
    read_node_capacity,
    read_node_memory,
)
from testbed.eks_nodes import base_node

KEY = NODE_MEMORY_LABEL
KEYS = memory_labels()


def ours(value):
    """Our label as the cache keeps it, ``key=value``."""
    return f"{KEY}={value}"


def partial(name, labels, resource_version="7"):
    """A PartialObjectMetadata as the API server serves it for ``as=PartialObjectMetadata``."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"name": name, "resourceVersion": resource_version, "labels": labels},
    }


def test_a_realistic_node_keeps_only_its_name_label_and_resource_version():
    node = base_node()
    meta = node_from_json(orjson.dumps(node), KEYS)
    assert node["metadata"]["labels"]["eks.amazonaws.com/capacityType"] == "ON_DEMAND"
    assert meta == NodeMeta(
        node["metadata"]["name"],
        ours(node["metadata"]["labels"][KEY]),
        node["metadata"]["resourceVersion"],
        NodeCapacity(capacity_type="on-demand"),
    )


def test_capacity_facts_are_read_from_the_labels_and_the_taints():
    node = base_node()
    node["metadata"]["labels"]["training.example.com/capacity-type"] = "spot"
    node["spec"]["taints"] = [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "DeletionCandidateOfClusterAutoscaler", "value": "1700000000", "effect": "PreferNoSchedule"},
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
    ]
    meta = node_from_json(orjson.dumps(node), KEYS)
    assert meta.capacity == NodeCapacity("spot", NODE_BEING_REMOVED, deletion_candidate=True)
    assert meta.capacity == read_node_capacity(node), "the policy's reading of the whole node"
    partial_meta = node_from_json(orjson.dumps(partial("n", {"karpenter.sh/capacity-type": "spot"})), KEYS)
    assert partial_meta.capacity == NodeCapacity("spot"), "metadata alone: labels, no taints"


def test_a_cordoned_node_is_read_as_being_taken_away():
    node = base_node()
    node["metadata"]["labels"]["training.example.com/capacity-type"] = "on-demand"
    node["spec"]["unschedulable"] = True
    facts = node_from_json(orjson.dumps(node), KEYS).capacity
    assert facts == NodeCapacity("on-demand", NODE_BEING_REMOVED) == read_node_capacity(node)
    assert fits_capacity_type("on-demand", facts) == (False, NODE_BEING_REMOVED)
    node["spec"]["unschedulable"] = False
    assert node_from_json(orjson.dumps(node), KEYS).capacity == NodeCapacity("on-demand")


def test_a_deletion_time_go_cannot_read_is_refused_with_the_node():
    node = base_node()
    node["metadata"]["deletionTimestamp"] = "yesterday"
    with pytest.raises(NodeDecodeError, match=r"metadata\.deletionTimestamp must be an RFC 3339 time"):
        node_from_json(orjson.dumps(node), KEYS)


def test_label_absent_null_and_labels_null():
    assert node_from_json(orjson.dumps(partial("a", {"other": "x"})), KEYS).label is None
    assert node_from_json(orjson.dumps(partial("b", {KEY: None})), KEYS).label == ours("")  # Go stores ""
    assert node_from_json(orjson.dumps(partial("c", None)), KEYS).label is None
    assert node_from_json(b'{"metadata": {"name": "d"}}', KEYS).label is None


def test_label_values_are_interned():
    first = node_from_json(orjson.dumps(partial("a", {KEY: "2" + "2888"})), KEYS)
    second = node_from_json(orjson.dumps(partial("b", {KEY: "22" + "888"})), KEYS)
    assert first.label is second.label


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b'{"metadata": {"labels": {}}}', "metadata.name"),
        (b'{"metadata": {"name": ""}}', "metadata.name"),
        (b'{"metadata": {"name": "n", "labels": ["x"]}}', "labels"),
        (b'{"metadata": {"name": "n", "labels": {"' + KEY.encode() + b'": 5}}}', "labels"),
        (b'{"metadata": 5}', "node"),
        (b"[]", "node"),
    ],
)
def test_unreadable_objects_are_refused_with_where(raw, where):
    with pytest.raises(NodeDecodeError, match=where):
        node_from_json(raw, KEYS)


def test_a_page_of_a_partial_object_metadata_list():
    body = orjson.dumps(
        {
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "42", "continue": "token"},
            "items": [partial("a", {KEY: "16384"}), partial("b", {})],
        }
    )
    page = page_from_json(body, KEYS)
    assert page.resource_version == "42"
    assert page.continue_token == "token"
    assert [(node.name, node.label) for node in page.nodes] == [("a", ours("16384")), ("b", None)]
    last = page_from_json(b'{"metadata": {"resourceVersion": "43"}, "items": null}', KEYS)
    assert (last.nodes, last.resource_version, last.continue_token) == ([], "43", "")


def test_watch_events_of_each_type():
    modified = event_from_json(
        orjson.dumps({"type": "MODIFIED", "object": partial("a", {KEY: "40960"}, "50")}), KEYS
    )
    assert (modified.type, modified.node, modified.resource_version) == (
        MODIFIED,
        NodeMeta("a", ours("40960"), "50"),
        "50",
    )
    deleted = event_from_json(orjson.dumps({"type": "DELETED", "object": partial("a", {}, "51")}), KEYS)
    assert deleted.node is not None
    assert (deleted.type, deleted.node.name) == (DELETED, "a")
    bookmark = event_from_json(
        b'{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","metadata":{"resourceVersion":"60"}}}',
        KEYS,
    )
    assert (bookmark.type, bookmark.node, bookmark.resource_version) == (BOOKMARK, None, "60")
    error = event_from_json(
        b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}', KEYS
    )
    assert error.type == ERROR
    assert error.status is not None
    assert (error.status.code, error.status.reason, error.status.message) == (410, "Expired", "too old")


@pytest.mark.parametrize(
    "line",
    [b"not json", b'{"type": "RENAMED", "object": {}}', b'{"object": {}}', b'{"type": "ADDED", "object": 3}'],
)
def test_unreadable_watch_lines_are_refused(line):
    with pytest.raises(NodeDecodeError, match="watch event"):
        event_from_json(line, KEYS)


def test_the_kept_label_reads_as_the_full_node():
    node = base_node()
    label = node_from_json(orjson.dumps(node), KEYS).label
    assert node_memory(label, DEFAULT_SETTINGS) == read_node_memory(node)
    del node["metadata"]["labels"][KEY]
    label = node_from_json(orjson.dumps(node), KEYS).label
    assert label == f"{GFD_GPU_MEMORY_LABEL}={node['metadata']['labels'][GFD_GPU_MEMORY_LABEL]}", (
        "the next scheme"
    )
    assert node_memory(label, DEFAULT_SETTINGS) == read_node_memory(node)
    for key in KEYS:
        node["metadata"]["labels"].pop(key, None)
    label = node_from_json(orjson.dumps(node), KEYS).label
    assert label is None
    assert node_memory(label, DEFAULT_SETTINGS) == read_node_memory(node)


def test_the_first_scheme_label_present_is_kept_even_when_invalid():
    labels = {"karpenter.k8s.aws/instance-gpu-memory": "16Gi", GFD_GPU_MEMORY_LABEL: "15360"}
    meta = node_from_json(orjson.dumps(partial("n", labels)), KEYS)
    assert meta.label == "karpenter.k8s.aws/instance-gpu-memory=16Gi"
    invalid = INVALID_MEMORY_LABEL.format(label="karpenter.k8s.aws/instance-gpu-memory")
    assert node_memory(meta.label, DEFAULT_SETTINGS) == NodeMemory(
        label="karpenter.k8s.aws/instance-gpu-memory", reason=invalid
    )
