"""The extender wire format: what is accepted, what is refused and with which status."""

from http import HTTPStatus

import orjson
import pytest

from extender_app.verbs.wire import (
    NODE_NAMES_REFUSED,
    WireError,
    encode_filter_result,
    encode_priorities,
    go_fold,
    parse_args,
)
from policy import GFD_GPU_MEMORY_LABEL, INSTANCE_TYPE_LABEL, NODE_MEMORY_LABEL, memory_labels
from testbed.eks_nodes import extender_body, make_nodes, make_pod

MAX_NODES = 10


def node(name: object) -> dict[str, object]:
    return {"metadata": {"name": name}}


def refused(body: bytes | dict[str, object], status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> str:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    with pytest.raises(WireError) as caught:
        parse_args(raw, MAX_NODES)
    assert caught.value.status == status
    assert "\n" not in caught.value.reason
    return caught.value.reason


def test_scheduler_body_parses_with_candidates_in_order():
    nodes = make_nodes(4)
    args = parse_args(extender_body(make_pod(), nodes), MAX_NODES)
    assert args.names == tuple(n["metadata"]["name"] for n in nodes)
    assert args.nodes == nodes
    assert args.pod["metadata"]["name"] == "train-0"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"nul",
        b'{"Pod": {}} {"Pod": {}}',
        b'{"Pod": {}, "Nodes": {"items": []}}x',
        b'{"Pod": {}, "Nodes": {"items": []}}\n{}',
        b"\xef\xbb\xbf{}",
        b'{"Pod": {}, "Nodes": {"items": [NaN]}}',
    ],
)
def test_not_exactly_one_json_object(body):
    assert "exactly one JSON object" in refused(body)


def test_trailing_whitespace_is_fine_as_in_go():
    body = extender_body(make_pod(), make_nodes(1)) + b" \r\n\t"
    assert len(parse_args(body, MAX_NODES).nodes) == 1


@pytest.mark.parametrize("document", [[], "x", 1, None, True])
def test_body_must_be_an_object(document):
    assert "must be a JSON object" in refused(orjson.dumps(document))


def test_pod_required():
    assert refused({"Nodes": {"items": []}}) == "Pod is required"
    assert refused({"Pod": None, "Nodes": {"items": []}}) == "Pod is required"
    assert refused({"Pod": [], "Nodes": {"items": []}}) == "Pod must be an object"


def test_nodes_required():
    assert "Nodes is required" in refused({"Pod": {}})
    assert "Nodes is required" in refused({"Pod": {}, "Nodes": None})
    assert "Nodes must be an object" in refused({"Pod": {}, "Nodes": []})
    assert "Nodes.items must be a list" in refused({"Pod": {}, "Nodes": {"items": {}}})


@pytest.mark.parametrize("names", [[], ["a"], "", {}])
def test_node_names_present_is_refused(names):
    body = {"Pod": {}, "Nodes": {"items": [node("a")]}, "NodeNames": names}
    assert refused(body) == NODE_NAMES_REFUSED


def test_node_names_null_or_absent_is_accepted():
    assert parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": []}, "NodeNames": None}), 1).names == ()
    assert parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": []}}), 1).names == ()


@pytest.mark.parametrize("node_list", [{}, {"items": None}, {"metadata": {}, "items": []}])
def test_empty_or_null_items_mean_no_candidates(node_list):
    """Go decodes an absent or null slice as empty: zero candidates, not an error."""
    args = parse_args(orjson.dumps({"Pod": {}, "Nodes": node_list}), MAX_NODES)
    assert args.nodes in ([], ())
    assert args.names == ()


def test_keys_match_case_insensitively_like_go():
    body = {"pod": {"metadata": {"name": "p"}}, "NODES": {"Items": [node("a")]}, "nodenames": None}
    args = parse_args(orjson.dumps(body), MAX_NODES)
    assert args.pod == {"metadata": {"name": "p"}}
    assert args.names == ("a",)


def test_go_folds_kelvin_and_long_s():
    assert go_fold("\u212aey") == go_fold("KEY")
    assert go_fold("NodeName\u017f") == go_fold("NodeNames")
    # with a long s (U+017F) it names the NodeNames field in Go, so a non-null one is refused
    assert refused({"Pod": {}, "Nodes": {"items": []}, "NodeName\u017f": []}) == NODE_NAMES_REFUSED


@pytest.mark.parametrize(
    "body",
    [
        b'{"Pod": {}, "pod": {}, "Nodes": {"items": []}}',
        b'{"Pod": {}, "Nodes": {"items": []}, "nodes": {"items": []}}',
        b'{"Pod": {}, "Nodes": {"items": [], "Items": []}}',
        b'{"Pod": {}, "Nodes": {"items": []}, "NodeNames": null, "nodeNames": null}',
    ],
)
def test_two_keys_for_one_field_are_ambiguous(body):
    assert "ambiguous" in refused(body)


def test_unknown_keys_are_ignored():
    body = {"Pod": {}, "Nodes": {"items": [node("a")], "kind": "NodeList"}, "Extra": 1}
    assert parse_args(orjson.dumps(body), MAX_NODES).names == ("a",)


@pytest.mark.parametrize("name", ["", None, 3, ["a"]])
def test_node_names_must_be_non_empty_strings(name):
    assert "metadata.name must be a non-empty string" in refused(
        {"Pod": {}, "Nodes": {"items": [node(name)]}}
    )


@pytest.mark.parametrize("item", [None, [], "node", 1, {"metadata": None}, {"metadata": "x"}, {}])
def test_items_must_be_named_node_objects(item):
    assert "Nodes.items[0]" in refused({"Pod": {}, "Nodes": {"items": [item]}})


def test_duplicate_names_are_refused():
    reason = refused({"Pod": {}, "Nodes": {"items": [node("a"), node("b"), node("a")]}})
    assert reason == "duplicate node name 'a' in Nodes.items"


def test_too_many_nodes_is_413():
    items = [node(f"n{index}") for index in range(MAX_NODES + 1)]
    reason = refused({"Pod": {}, "Nodes": {"items": items}}, HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    assert "11" in reason
    assert "--max-nodes" in reason
    items.pop()
    assert len(parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": items}}), MAX_NODES).names) == MAX_NODES


def test_filter_result_keeps_passing_nodes_exactly_and_the_list_metadata():
    nodes = make_nodes(3)
    received = {"Pod": {}, "Nodes": {"metadata": {"resourceVersion": "7"}, "Items": nodes}}
    args = parse_args(orjson.dumps(received), MAX_NODES)
    encoded = orjson.loads(encode_filter_result(args, [0, 2], {"b": "why"}))
    assert list(encoded) == ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]
    assert encoded["Nodes"] == {"metadata": {"resourceVersion": "7"}, "items": [nodes[0], nodes[2]]}
    assert encoded["NodeNames"] is None
    assert encoded["FailedNodes"] == {}
    assert encoded["FailedAndUnresolvableNodes"] == {"b": "why"}
    assert encoded["Error"] == ""


def test_filter_result_with_no_passing_node_has_an_empty_list_not_null():
    args = parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": [node("a")]}}), MAX_NODES)
    encoded = orjson.loads(encode_filter_result(args, [], {"a": "no"}))
    assert encoded["Nodes"]["items"] == []


def test_priorities_are_an_array_in_order():
    assert orjson.loads(encode_priorities([("b", 3), ("a", 10)])) == [
        {"Host": "b", "Score": 3},
        {"Host": "a", "Score": 10},
    ]
    assert encode_priorities([]) == b"[]"


def test_passing_nodes_are_echoed_byte_for_byte():
    """The answer carries the received bytes of each passing node: spacing, key order, escapes."""
    odd = b'{ "status" : {"images":[]},\n "metadata":{"labels":{"x":"\\u00e9"},"name":"odd"} }'
    plain = b'{"metadata":{"name":"plain"}}'
    body = b'{"Pod":{},"Nodes":{"metadata":{"resourceVersion":"9"},"items":[' + odd + b"," + plain + b"]}}"
    args = parse_args(body, MAX_NODES)
    answer = encode_filter_result(args, [0, 1], {})
    assert odd in answer
    assert plain in answer
    assert orjson.loads(answer)["Nodes"] == {
        "metadata": {"resourceVersion": "9"},
        "items": [orjson.loads(odd), orjson.loads(plain)],
    }


def test_canonical_and_other_spellings_read_the_same():
    nodes = make_nodes(3)
    canonical = parse_args(extender_body(make_pod(), nodes), MAX_NODES)
    other = parse_args(
        orjson.dumps({"pOD": make_pod(), "nodes": {"Items": nodes, "Kind": "NodeList"}}), MAX_NODES
    )
    assert canonical.names == other.names
    assert canonical.pod == other.pod
    assert canonical.nodes == other.nodes == nodes


@pytest.mark.parametrize(
    "bad",
    [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"],
    ids=["invalid byte", "truncated sequence", "encoded surrogate", "overlong"],
)
def test_body_that_is_not_utf8_is_refused_even_where_nothing_is_read(bad):
    body = b'{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a"},"status":{"x":"' + bad + b'"}}]}}'
    assert "not UTF-8" in refused(body)


def test_lone_surrogate_escape_is_refused():
    body = b'{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a"},"status":{"x":"\\ud800"}}]}}'
    assert "exactly one JSON object" in refused(body)


def test_labels_are_read_only_when_the_policy_needs_them():
    body = orjson.dumps({"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "a", "labels": [1]}}]}})
    args = parse_args(body, MAX_NODES)  # not read yet
    with pytest.raises(WireError) as caught:
        args.memory_label(0, (NODE_MEMORY_LABEL,))
    assert caught.value.status == HTTPStatus.BAD_REQUEST
    assert "Nodes.items[0].metadata.labels" in caught.value.reason


def test_only_the_policy_labels_are_type_checked():
    node = {"metadata": {"name": "a", "labels": {"other": 5, NODE_MEMORY_LABEL: "40960"}}}
    args = parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": [node]}}), MAX_NODES)
    assert args.memory_label(0, (NODE_MEMORY_LABEL,)) == f"{NODE_MEMORY_LABEL}=40960"
    assert args.memory_label(0, ("absent",)) is None
    wrong = {"metadata": {"name": "a", "labels": {NODE_MEMORY_LABEL: 40960}}}
    args = parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": [wrong]}}), MAX_NODES)
    with pytest.raises(WireError) as caught:
        args.memory_label(0, (NODE_MEMORY_LABEL,))
    assert NODE_MEMORY_LABEL in caught.value.reason or "labels" in caught.value.reason


def test_only_the_first_scheme_label_a_node_carries_reaches_the_policy():
    labels = {"kubernetes.io/os": "linux", GFD_GPU_MEMORY_LABEL: "15360", INSTANCE_TYPE_LABEL: "g4dn.xlarge"}
    node = {"metadata": {"name": "a", "labels": labels}}
    args = parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": [node]}}), MAX_NODES)
    assert args.memory_label(0, memory_labels()) == f"{GFD_GPU_MEMORY_LABEL}=15360"
    labels[NODE_MEMORY_LABEL] = "16384"
    args = parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": [node]}}), MAX_NODES)
    assert args.memory_label(0, memory_labels()) == f"{NODE_MEMORY_LABEL}=16384"


READ_WITH_THE_NODES = [
    {"metadata": {"name": "valid", "labels": {"other": 5, GFD_GPU_MEMORY_LABEL: "15360"}}},
    {"metadata": {"name": "ours-null", "labels": {NODE_MEMORY_LABEL: None, GFD_GPU_MEMORY_LABEL: "1"}}},
    {"metadata": {"name": "null-labels", "labels": None}},
    {"metadata": {"name": "no-labels"}},
    {"metadata": {"name": "none-of-them", "labels": {"kubernetes.io/os": "linux"}}},
    {"metadata": {"name": "number", "labels": {NODE_MEMORY_LABEL: 40960}}},
    {"metadata": {"name": "not-an-object", "labels": [1]}},
    {"metadata": {"name": "later-number", "labels": {INSTANCE_TYPE_LABEL: 7}}},
]


def _memory_label_or_refusal(args: object, index: int) -> object:
    try:
        return args.memory_label(index, memory_labels())  # type: ignore[attr-defined]
    except WireError as error:
        return (error.status, error.reason)


def test_memory_labels_read_with_the_nodes_match_those_read_when_the_policy_asks():
    body = orjson.dumps({"Pod": {}, "Nodes": {"items": READ_WITH_THE_NODES}})
    lazily = parse_args(body, MAX_NODES)
    at_once = parse_args(body, MAX_NODES, memory_labels())  # a refused label does not refuse the body
    assert at_once.names == lazily.names
    answers = [_memory_label_or_refusal(at_once, index) for index in range(len(READ_WITH_THE_NODES))]
    assert answers == [_memory_label_or_refusal(lazily, index) for index in range(len(READ_WITH_THE_NODES))]
    assert answers[:5] == [f"{GFD_GPU_MEMORY_LABEL}=15360", f"{NODE_MEMORY_LABEL}=", None, None, None]
    assert all(isinstance(answer, tuple) for answer in answers[5:])
    with pytest.raises(ValueError, match="read for"):
        at_once.memory_label(0, (NODE_MEMORY_LABEL,))


def test_a_duplicate_name_is_refused_when_labels_are_read_with_the_nodes():
    items = [node("a"), node("a")]
    with pytest.raises(WireError, match="duplicate node name"):
        parse_args(orjson.dumps({"Pod": {}, "Nodes": {"items": items}}), MAX_NODES, memory_labels())
