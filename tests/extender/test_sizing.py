"""The default limits admit the largest candidate list kube-scheduler can send (5,000 realistic nodes)."""

import orjson

from extender_app.settings import BYTES_PER_REALISTIC_NODE, MAX_CLUSTER_NODES, ExtenderSettings
from testbed.eks_nodes import base_node, bytes_per_node, extender_body, make_nodes, make_pod
from testbed.extender import request, scheduler_context


def test_the_documented_node_size_is_the_fixture_s():
    assert len(orjson.dumps(base_node())) == BYTES_PER_REALISTIC_NODE
    assert abs(bytes_per_node(200) - BYTES_PER_REALISTIC_NODE) < 0.01 * BYTES_PER_REALISTIC_NODE


def test_defaults_fit_the_largest_cluster_with_headroom():
    defaults = ExtenderSettings()
    assert defaults.max_nodes == MAX_CLUSTER_NODES == 5000
    assert defaults.max_body_bytes >= 1.25 * MAX_CLUSTER_NODES * BYTES_PER_REALISTIC_NODE


def test_a_5000_node_request_is_served_with_the_defaults(extender, pki):
    nodes = make_nodes(MAX_CLUSTER_NODES)
    body = extender_body(make_pod(min_memory_mib=40960), nodes)
    assert len(body) > 90 * 2**20
    reply = request(extender.ports.port, scheduler_context(pki), "/prioritize", body)
    assert reply.status == 200
    answer = reply.json()
    assert len(answer) == MAX_CLUSTER_NODES
    assert answer[-1]["Host"] == nodes[-1]["metadata"]["name"]
