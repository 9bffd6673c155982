"""The names-only contract (``--node-cache watch``): request shapes, limits, and both verbs on a cache."""

from dataclasses import replace
from http import HTTPStatus

import orjson
import pytest

from extender_app.metrics import create_metrics
from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.metadata import NodeMeta
from extender_app.node_labels import memory_label
from extender_app.verbs.cached_handlers import UNKNOWN_NODE, cached_verbs
from extender_app.verbs.handlers import VerbLimits
from extender_app.verbs.wire import MAX_DEPTH_REASON
from extender_app.verbs.wire_names import (
    NODE_NAMES_NOT_LIST,
    NODE_NAMES_REQUIRED,
    NODES_REFUSED,
    parse_names_args,
)
from policy import (
    BELOW_MINIMUM,
    GFD_GPU_MEMORY_LABEL,
    INSTANCE_TYPE_LABEL,
    INVALID_MEMORY_LABEL,
    INVALID_MIN_MEMORY,
    INVALID_NODE_LABEL,
    KARPENTER_GPU_MEMORY_LABEL,
    NODE_MEMORY_LABEL,
    REQUIRES_GPU_REQUEST,
    PolicySettings,
    memory_labels,
)
from testbed.eks_nodes import make_pod

LIMITS = VerbLimits(max_nodes=5000, policy=PolicySettings())
FILTER_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
LABELS = {"t4": "16384", "a10g": "22888", "a100": "40960", "h100": "81920", "cpu": None, "bad": "lots"}


def ours(value: str) -> str:
    """Our memory label as the cache keeps it."""
    return memory_label(NODE_MEMORY_LABEL, value)


def names_body(pod, names, **extra):
    """What kube-scheduler 1.35 marshals for a nodeCacheCapable extender."""
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names, **extra})


@pytest.fixture
def verbs():
    cache = NodeCache(memory_labels())
    cache.replace([NodeMeta(name, label and ours(label)) for name, label in LABELS.items()], "1", 0.0)
    metrics = create_metrics(node_cache=True).node_cache
    return cached_verbs(cache, metrics), cache, metrics


def call(verbs, path, body, limits=LIMITS):
    return verbs[0][path](body, limits)


def test_filter_answers_node_names_and_why_the_others_fail(verbs):
    names = ["h100", "t4", "ghost", "a100", "cpu", "bad", "a10g"]
    result = call(verbs, "/filter", names_body(make_pod(min_memory_mib=40960), names))
    assert result.status == HTTPStatus.OK
    answer = orjson.loads(result.body)
    assert list(answer) == FILTER_KEYS
    assert answer["Nodes"] is None
    assert answer["NodeNames"] == ["h100", "a100"]  # in the order received
    assert answer["FailedNodes"] == {"ghost": UNKNOWN_NODE}  # resolvable: the scheduler retries
    assert answer["FailedAndUnresolvableNodes"] == {
        "t4": BELOW_MINIMUM,
        "cpu": INVALID_NODE_LABEL,
        "bad": INVALID_MEMORY_LABEL.format(label=NODE_MEMORY_LABEL),
        "a10g": BELOW_MINIMUM,
    }
    assert answer["Error"] == ""
    assert (result.candidates, result.passed, result.unknown) == (7, 2, 1)
    metric = verbs[2].unknown_candidates.collect()[0].samples[0]
    assert metric.value == 1


def test_nodes_judged_by_other_schemes_answer_as_the_policy_reads_them():
    table = {"p5.48xlarge": 81920}
    limits = VerbLimits(max_nodes=10, policy=PolicySettings(instance_type_gpu_memory_mib=table))
    cache = NodeCache(memory_labels(limits.policy))
    cache.replace(
        [
            NodeMeta("karpenter", memory_label(KARPENTER_GPU_MEMORY_LABEL, "45776")),
            NodeMeta("gfd", memory_label(GFD_GPU_MEMORY_LABEL, "15360")),
            NodeMeta("typed", memory_label(INSTANCE_TYPE_LABEL, "p5.48xlarge")),
            NodeMeta("untyped", memory_label(INSTANCE_TYPE_LABEL, "m5.xlarge")),
            NodeMeta("odd", memory_label(GFD_GPU_MEMORY_LABEL, "16Gi")),
        ],
        "1",
        0.0,
    )
    names = ["karpenter", "gfd", "typed", "untyped", "odd"]
    verbs = cached_verbs(cache)
    answer = orjson.loads(verbs["/filter"](names_body(make_pod(min_memory_mib=40960), names), limits).body)
    assert answer["NodeNames"] == ["karpenter", "typed"]
    assert answer["FailedAndUnresolvableNodes"] == {
        "gfd": BELOW_MINIMUM,
        "untyped": "instance type m5.xlarge is not in the GPU table",
        "odd": "invalid GPU-memory label nvidia.com/gpu.memory (not 1..1048576 MiB)",
    }
    scores = orjson.loads(verbs["/prioritize"](names_body(make_pod(min_memory_mib=1), names), limits).body)
    assert [entry["Score"] for entry in scores] == [5, 1, 10, 0, 0]


def test_a_pod_without_a_minimum_fits_everywhere_even_unknown_nodes(verbs):
    names = ["cpu", "ghost", "bad"]
    answer = orjson.loads(call(verbs, "/filter", names_body(make_pod(), names)).body)
    assert answer["NodeNames"] == names
    assert answer["FailedNodes"] == answer["FailedAndUnresolvableNodes"] == {}


def test_prioritize_scores_by_name_and_unknown_nodes_score_zero(verbs):
    names = ["t4", "ghost", "h100", "a100", "cpu", "a10g"]
    result = call(verbs, "/prioritize", names_body(make_pod(min_memory_mib=1), names))
    assert result.status == HTTPStatus.OK
    assert orjson.loads(result.body) == [
        {"Host": "t4", "Score": 2},
        {"Host": "ghost", "Score": 0},
        {"Host": "h100", "Score": 10},
        {"Host": "a100", "Score": 5},
        {"Host": "cpu", "Score": 0},
        {"Host": "a10g", "Score": 2},
    ]
    assert result.unknown == 1
    no_gpu = orjson.loads(call(verbs, "/prioritize", names_body(make_pod(gpus=0), ["h100"])).body)
    assert no_gpu == [{"Host": "h100", "Score": 0}]


def test_each_request_reads_one_snapshot_and_sees_later_events(verbs):
    _, cache, _ = verbs
    body = names_body(make_pod(min_memory_mib=40960), ["t4", "late"])
    assert orjson.loads(call(verbs, "/filter", body).body)["NodeNames"] == []
    cache.replace([NodeMeta("t4", ours("81920")), NodeMeta("late", ours("45776"))], "2", 1.0)
    assert orjson.loads(call(verbs, "/filter", body).body)["NodeNames"] == ["t4", "late"]


@pytest.mark.parametrize("status", [HTTPStatus.OK, HTTPStatus.BAD_REQUEST])
@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (make_pod(min_memory_mib="0x10"), INVALID_MIN_MEMORY),
        (make_pod(min_memory_mib=1, gpus=0), REQUIRES_GPU_REQUEST),
    ],
)
def test_a_pod_the_policy_cannot_judge_under_both_pod_error_statuses(verbs, status, pod, message):
    limits = replace(LIMITS, pod_error_status=status)
    names = ["h100", "ghost"]
    filtered = call(verbs, "/filter", names_body(pod, names), limits)
    scored = call(verbs, "/prioritize", names_body(pod, names), limits)
    assert filtered.status == scored.status == status
    if status == HTTPStatus.BAD_REQUEST:
        assert filtered.body.decode() == scored.body.decode() == message
        return
    answer = orjson.loads(filtered.body)
    assert answer == {
        "Nodes": None,
        "NodeNames": [],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {"h100": message, "ghost": message},
        "Error": "",
    }
    assert orjson.loads(scored.body) == [{"Host": "h100", "Score": 0}, {"Host": "ghost", "Score": 0}]
    assert filtered.pod_error == message


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b'{"Pod": {}, "Nodes": {"items": []}, "NodeNames": ["a"]}', 400, NODES_REFUSED),
        (b'{"Pod": {}, "nodes": {}, "NodeNames": ["a"]}', 400, NODES_REFUSED),
        (b'{"Pod": {}, "Nodes": null, "NodeNames": null}', 400, NODE_NAMES_REQUIRED),
        (b'{"Pod": {}}', 400, NODE_NAMES_REQUIRED),
        (b'{"Pod": {}, "NodeNames": "a"}', 400, NODE_NAMES_NOT_LIST),
        (b'{"Pod": {}, "NodeNames": ["a", 3]}', 400, "NodeNames[1] must be a non-empty string"),
        (b'{"Pod": {}, "NodeNames": ["a", null]}', 400, "NodeNames[1] must be a non-empty string"),
        (b'{"Pod": {}, "NodeNames": ["a", ""]}', 400, "NodeNames[1] must be a non-empty string"),
        (b'{"Pod": {}, "NodeNames": ["a", "b", "a"]}', 400, "duplicate node name 'a' in NodeNames"),
        (b'{"Pod": null, "NodeNames": ["a"]}', 400, "Pod is required"),
        (b'{"Pod": [], "NodeNames": ["a"]}', 400, "Pod must be an object"),
        (b'{"Pod": {}, "NodeNames": ["a"]} {}', 400, "exactly one JSON object"),
        (b'{"Pod": {}, "NodeNames": ["a"]}x', 400, "exactly one JSON object"),
        (b"[]", 400, "must be a JSON object"),
        (b'{"Pod": {}, "NodeNames": ["a"], "nodeNames": ["b"]}', 400, "ambiguous ExtenderArgs"),
        (b'{"Pod": {}, "NodeNames": ["\xff"]}', 400, "not UTF-8"),
        (b'{"Pod": {}, "NodeNames": ["a", "b", "c", "d"]}', 413, "too many candidate nodes: 4 (limit 3"),
        (b'{"Pod": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400, MAX_DEPTH_REASON),
    ],
)
def test_refusals_name_the_problem(verbs, body, status, reason):
    limits = replace(LIMITS, max_nodes=3)
    for path in ("/filter", "/prioritize"):
        result = call(verbs, path, body, limits)
        assert result.status == status
        assert reason in result.body.decode()


def test_keys_are_matched_as_go_matches_them():
    args = parse_names_args(
        b'{"pod": {"metadata": {"name": "p"}}, "NODES": null, "nodenames": ["a"], "x": 1}', 5
    )
    assert (args.pod, list(args.names)) == ({"metadata": {"name": "p"}}, ["a"])
    long_s = parse_names_args('{"Pod": {}, "NodeName\u017f": ["b"]}'.encode(), 5)  # Go folds long s to s
    assert list(long_s.names) == ["b"]


def test_zero_candidates_answer_empty(verbs):
    answer = orjson.loads(call(verbs, "/filter", names_body(make_pod(min_memory_mib=5), [])).body)
    assert (answer["NodeNames"], answer["FailedNodes"], answer["FailedAndUnresolvableNodes"]) == ([], {}, {})
    assert orjson.loads(call(verbs, "/prioritize", names_body(make_pod(), [])).body) == []


def test_5000_names_are_answered_in_order(verbs):
    _, cache, _ = verbs
    names = [f"ip-10-0-{index // 250}-{index % 250}.ec2.internal" for index in range(5000)]
    sizes = ("16384", "22888", "40960", "81920")
    cache.replace([NodeMeta(name, ours(sizes[index % 4])) for index, name in enumerate(names)], "3", 2.0)
    answer = orjson.loads(call(verbs, "/filter", names_body(make_pod(min_memory_mib=40960), names)).body)
    assert answer["NodeNames"] == [name for index, name in enumerate(names) if index % 4 >= 2]
    assert len(answer["FailedAndUnresolvableNodes"]) == 2500
