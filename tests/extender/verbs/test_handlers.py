"""The two verbs on top of the policy, on realistic EKS nodes (no sockets here)."""

from dataclasses import replace
from http import HTTPStatus

import orjson
import pytest

from extender_app.verbs.handlers import VERBS, VerbLimits, filter_verb, prioritize_verb
from policy import (
    BELOW_MINIMUM,
    INVALID_MEMORY_LABEL,
    INVALID_MIN_MEMORY,
    NODE_MEMORY_LABEL,
    REQUIRES_GPU_REQUEST,
    PolicySettings,
)
from testbed.eks_nodes import INSTANCE_TYPES, extender_body, make_nodes, make_pod

LIMITS = VerbLimits(max_nodes=5000, policy=PolicySettings())


def labels_by_name(nodes):
    return {n["metadata"]["name"]: int(n["metadata"]["labels"][NODE_MEMORY_LABEL]) for n in nodes}


def test_only_post_filter_and_prioritize_exist():
    assert set(VERBS) == {"/filter", "/prioritize"}


def test_filter_keeps_nodes_with_enough_memory_as_received():
    nodes = make_nodes(12)
    result = filter_verb(extender_body(make_pod(min_memory_mib=40960), nodes), LIMITS)
    assert result.status == HTTPStatus.OK
    answer = orjson.loads(result.body)
    expected = [n for n in nodes if int(n["metadata"]["labels"][NODE_MEMORY_LABEL]) >= 40960]
    assert answer["Nodes"]["items"] == expected  # whole objects, unchanged, in order
    rejected = {n["metadata"]["name"] for n in nodes} - {n["metadata"]["name"] for n in expected}
    assert answer["FailedAndUnresolvableNodes"] == dict.fromkeys(sorted(rejected), BELOW_MINIMUM)
    assert answer["FailedNodes"] == {}
    assert answer["Error"] == ""
    assert (result.pod, result.candidates, result.passed) == ("training/train-0", 12, len(expected))


def test_filter_without_minimum_passes_every_node_even_unlabelled():
    nodes = make_nodes(3)
    del nodes[1]["metadata"]["labels"][NODE_MEMORY_LABEL]
    answer = orjson.loads(filter_verb(extender_body(make_pod(), nodes), LIMITS).body)
    assert answer["Nodes"]["items"] == nodes
    assert answer["FailedAndUnresolvableNodes"] == {}


def test_filter_reports_a_bad_label_as_unresolvable():
    nodes = make_nodes(2)
    nodes[0]["metadata"]["labels"][NODE_MEMORY_LABEL] = "lots"
    answer = orjson.loads(filter_verb(extender_body(make_pod(min_memory_mib=1), nodes), LIMITS).body)
    assert answer["Nodes"]["items"] == [nodes[1]]
    reason = INVALID_MEMORY_LABEL.format(label=NODE_MEMORY_LABEL)
    assert answer["FailedAndUnresolvableNodes"] == {nodes[0]["metadata"]["name"]: reason}


def test_prioritize_scores_every_candidate_in_order():
    nodes = make_nodes(len(INSTANCE_TYPES) * 2)
    result = prioritize_verb(extender_body(make_pod(min_memory_mib=1000), nodes), LIMITS)
    assert result.status == HTTPStatus.OK
    answer = orjson.loads(result.body)
    assert [entry["Host"] for entry in answer] == [n["metadata"]["name"] for n in nodes]
    labels = labels_by_name(nodes)
    for entry in answer:
        assert list(entry) == ["Host", "Score"]
        assert entry["Score"] == min(100, labels[entry["Host"]] * 100 // 81920) // 10
    assert {entry["Score"] for entry in answer} == {2, 5, 10}  # 16-22 GiB, 40-45 GiB, 80 GiB


def test_prioritize_gives_zero_to_pods_without_gpus():
    answer = orjson.loads(prioritize_verb(extender_body(make_pod(gpus=0), make_nodes(4)), LIMITS).body)
    assert [entry["Score"] for entry in answer] == [0, 0, 0, 0]


INVALID_PODS = [
    (make_pod(min_memory_mib="0"), INVALID_MIN_MEMORY),
    (make_pod(min_memory_mib=" 100"), INVALID_MIN_MEMORY),
    (make_pod(min_memory_mib=1024, gpus=0), REQUIRES_GPU_REQUEST),
]


@pytest.mark.parametrize("status", [HTTPStatus.OK, HTTPStatus.BAD_REQUEST])
def test_policy_errors_carry_the_policy_message_under_both_pod_error_statuses(status):
    limits = replace(LIMITS, pod_error_status=status)
    nodes = make_nodes(2)
    names = [node["metadata"]["name"] for node in nodes]
    for pod, message in INVALID_PODS:
        filtered = filter_verb(extender_body(pod, nodes), limits)
        scored = prioritize_verb(extender_body(pod, nodes), limits)
        for result in (filtered, scored):
            assert result.status == status
            assert result.pod == "training/train-0"
        if status == HTTPStatus.BAD_REQUEST:  # --pod-error-status 400: the message as plain text
            assert filtered.body.decode() == scored.body.decode() == message
            continue
        answer = orjson.loads(filtered.body)
        assert answer["Nodes"]["items"] == []
        assert answer["FailedAndUnresolvableNodes"] == dict.fromkeys(names, message)
        assert (answer["FailedNodes"], answer["NodeNames"], answer["Error"]) == ({}, None, "")
        assert (filtered.passed, filtered.pod_error) == (0, message)
        assert orjson.loads(scored.body) == [{"Host": name, "Score": 0} for name in names]
        assert scored.pod_error == message


def test_the_default_answers_an_invalid_pod_with_200():
    assert LIMITS.pod_error_status == HTTPStatus.OK


def test_malformed_node_is_400_naming_the_field():
    nodes = make_nodes(2)
    nodes[1]["metadata"]["labels"] = ["not", "a", "map"]
    result = filter_verb(extender_body(make_pod(min_memory_mib=1), nodes), LIMITS)
    assert result.status == HTTPStatus.BAD_REQUEST
    assert b"labels" in result.body


def test_policy_settings_are_honoured():
    nodes = make_nodes(2)
    for node in nodes:
        node["metadata"]["labels"]["example.org/vram"] = "8192"
    pod = make_pod()
    pod["metadata"]["annotations"]["example.org/need"] = "10000"
    limits = VerbLimits(
        max_nodes=10,
        policy=PolicySettings(
            min_memory_annotation="example.org/need",
            node_memory_label="example.org/vram",
            score_scale_mib=8192,
        ),
    )
    answer = orjson.loads(filter_verb(extender_body(pod, nodes), limits).body)
    assert answer["Nodes"]["items"] == []
    scores = orjson.loads(prioritize_verb(extender_body(make_pod(), nodes), limits).body)
    assert [entry["Score"] for entry in scores] == [10, 10]


def test_zero_candidates_answer_empty():
    answer = orjson.loads(filter_verb(extender_body(make_pod(min_memory_mib=5), []), LIMITS).body)
    assert answer["Nodes"]["items"] == []
    assert orjson.loads(prioritize_verb(extender_body(make_pod(), []), LIMITS).body) == []


def test_wire_errors_pass_through_with_their_status():
    too_many = VerbLimits(max_nodes=1, policy=PolicySettings())
    result = filter_verb(extender_body(make_pod(), make_nodes(2)), too_many)
    assert result.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert prioritize_verb(b"{}", LIMITS).status == HTTPStatus.BAD_REQUEST


def test_filter_and_prioritize_read_the_next_scheme_on_a_node_without_our_label():
    nodes = make_nodes(3)  # g4dn.xlarge (GFD: 15360), g5.2xlarge (GFD: 23028), g5.12xlarge
    for node in nodes:
        del node["metadata"]["labels"][NODE_MEMORY_LABEL]
    del nodes[2]["metadata"]["labels"]["nvidia.com/gpu.memory"]
    limits = VerbLimits(
        max_nodes=10, policy=PolicySettings(instance_type_gpu_memory_mib={"g5.12xlarge": 22888})
    )
    names = [node["metadata"]["name"] for node in nodes]
    answer = orjson.loads(filter_verb(extender_body(make_pod(min_memory_mib=16384), nodes), limits).body)
    assert [node["metadata"]["name"] for node in answer["Nodes"]["items"]] == names[1:]
    assert answer["FailedAndUnresolvableNodes"] == {names[0]: BELOW_MINIMUM}, "GFD's 15360 is below 16384"
    scores = orjson.loads(prioritize_verb(extender_body(make_pod(min_memory_mib=1), nodes), limits).body)
    assert [entry["Score"] for entry in scores] == [1, 2, 2]
