"""The topology planner: the shared vectors, and the optimum an exhaustive search finds on small zones."""

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy.network_topology import TopologyChoice, TopologySettings, node_path, parse_topology_choice
from policy.topology_plan import (
    NO_NETWORK_NODE_HOLDS,
    ZONE_TOO_SMALL,
    TopologyNode,
    TopologyPlan,
    plan_topology,
)
from tests.policy.topology_brute_force import cost, domain_key, generated_cases, optimum
from tests.vectors import load_file

DOCUMENT = load_file("topology_cases.json")
PLAN_CASES: list[dict[str, Any]] = DOCUMENT["plans"]
GENERATED_CASES: list[dict[str, Any]] = DOCUMENT["generated"]


def zone_of(case: dict[str, Any]) -> list[TopologyNode]:
    settings = TopologySettings(max_layers=case["max_layers"])
    return [
        TopologyNode(node["name"], node_path(node["labels"], settings), node["free_gpus"])
        for node in case["nodes"]
    ]


def plan_of(case: dict[str, Any]) -> TopologyPlan:
    settings = TopologySettings(max_layers=case["max_layers"])
    choice = parse_topology_choice(case["choice"], settings)
    return plan_topology(zone_of(case), case["members"], choice, case["max_layers"])


def test_vector_file_covers_each_outcome() -> None:
    names = [case["name"] for case in (*PLAN_CASES, *GENERATED_CASES)]
    assert len(names) == len(set(names)), "case names must be unique"
    assert {next(iter(case["expect"])) for case in PLAN_CASES} == {"nodes", "message"}
    assert {case["optimum"] is None for case in GENERATED_CASES} == {True, False}


def test_generated_cases_are_current() -> None:
    """The file's generated section is what the seeded generator and the exhaustive search give
    (``python -m tests.policy.topology_brute_force`` rewrites it)."""
    assert generated_cases() == GENERATED_CASES


@pytest.mark.parametrize("case", PLAN_CASES, ids=lambda case: case["name"])
def test_plan_case(case: dict[str, Any]) -> None:
    plan = plan_of(case)
    expect = case["expect"]
    assert plan.message == expect.get("message", "")
    assert list(plan.nodes) == expect.get("nodes", [])
    assert list(plan.layers) == expect.get("layers", [])
    if not plan.message:
        check_plan(zone_of(case), case["members"], plan, case["max_layers"])


@pytest.mark.parametrize("case", GENERATED_CASES, ids=lambda case: case["name"])
def test_generated_case_reaches_the_optimum(case: dict[str, Any]) -> None:
    plan = plan_of(case)
    if case["optimum"] is None:
        assert plan.message
        assert not plan.nodes
        return
    assert list(plan.cost) == case["optimum"]
    check_plan(zone_of(case), case["members"], plan, case["max_layers"])


def check_plan(zone: Sequence[TopologyNode], members: Sequence[int], plan: TopologyPlan, layers: int) -> None:
    """Every member with GPUs has a node with room for it, members without none; the cost is the
    rule's; each domain's members are consecutive indices."""
    gpus = max(members)
    by_name = {node.name: node for node in zone}
    assert len(plan.nodes) == len(members)
    counts: dict[str, int] = {}
    for count, name in zip(members, plan.nodes, strict=True):
        assert (name == "") == (count == 0)
        if name:
            counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        assert count * gpus <= by_name[name].free_gpus, f"{name} is given more members than it has room for"
    triples = [(node.name, node.path, node.free_gpus) for node in zone]
    usable = [triple for triple in triples if triple[2] // gpus > 0]
    # The domain counts (unlike the room) do not depend on which nodes the room is counted over.
    assert plan.cost[:layers] == cost(usable, counts, gpus, layers)[:layers]
    assert list(plan.layers) == list(reversed(plan.cost[:layers]))
    ranks = [name for name in plan.nodes if name]
    for layer in range(1, layers + 1):
        keys = [domain_key(name, by_name[name].path, layer) for name in ranks]
        runs = [key for index, key in enumerate(keys) if index == 0 or keys[index - 1] != key]
        assert len(runs) == len(set(runs)), f"the members of a layer-{layer} domain are not consecutive"


@st.composite
def zones(draw: st.DrawFn) -> tuple[int, list[TopologyNode], list[int], int]:
    """A zone of up to 9 nodes in a random network tree (some nodes unlabelled or with fewer
    layers), a job of up to 6 members with GPUs and maybe a launcher without, and a required
    layer (0: preferred)."""
    layers = draw(st.integers(2, 4))
    depths = st.one_of(st.just(layers), st.integers(0, layers))
    nodes = []
    for index in range(draw(st.integers(1, 9))):
        depth = draw(depths)
        path = tuple(f"{layer}{draw(st.sampled_from('abc'))}" for layer in range(1, depth + 1))
        nodes.append(TopologyNode(f"n{index}", path, draw(st.sampled_from([0, 2, 4, 8, 8, 16]))))
    gpus = draw(st.sampled_from([1, 2, 4, 8, 8]))
    members = [gpus] * draw(st.integers(1, 6)) + [0] * draw(st.integers(0, 1))
    members = draw(st.permutations(members))
    return layers, nodes, list(members), draw(st.sampled_from([0, 0, *range(1, layers + 1)]))


@st.composite
def full_trees(draw: st.DrawFn) -> tuple[int, list[TopologyNode], list[int], int]:
    """A three-layer tree: two layer-1 network nodes, one or two under each, one or two under
    those, one node of 0..4 free slots per bottom domain, and a job of up to 8 members: the shapes
    where counting the bottom layer first and counting the top first disagree."""
    fan = st.integers(1, 2)
    nodes = []
    for top in range(2):
        for middle in range(draw(fan)):
            for bottom in range(draw(fan)):
                path = (f"t{top}", f"s{top}{middle}", f"b{top}{middle}{bottom}")
                nodes.append(TopologyNode(f"n{top}{middle}{bottom}", path, 2 * draw(st.integers(0, 4))))
    members = [2] * draw(st.integers(1, 8))
    return 3, nodes, members, draw(st.sampled_from([0, 0, 1, 2, 3]))


@settings(max_examples=400, deadline=None)
@given(st.one_of(zones(), full_trees()))
def test_the_plan_is_the_optimum_an_exhaustive_search_finds(
    zone: tuple[int, list[TopologyNode], list[int], int],
) -> None:
    layers, nodes, members, required = zone
    plan = plan_topology(nodes, members, TopologyChoice(required_layer=required), layers)
    best = optimum([(node.name, node.path, node.free_gpus) for node in nodes], members, required, layers)
    if best is None:
        assert plan.message
        return
    assert plan.message == ""
    assert plan.cost == best
    gpus = max(members)
    usable = [
        (node.name, node.path, node.free_gpus)
        for node in nodes
        if node.free_gpus // gpus > 0 and len(node.path) >= required
    ]
    counts: dict[str, int] = {}
    for name in plan.nodes:
        if name:
            counts[name] = counts.get(name, 0) + 1
    assert cost(usable, counts, gpus, layers) == best, "the plan's cost is the cost of its nodes"
    if required:
        paths = {node.name: node.path for node in nodes}
        assert len({paths[name][:required] for name in counts}) == 1, "one network node holds the job"
    check_plan(nodes, members, plan, layers)


def test_messages_name_the_shortfall() -> None:
    zone = [
        TopologyNode("a", ("t", "s", "b"), 8),
        TopologyNode("c", ("t", "s2", "d"), 8),
        TopologyNode("u", (), 16),
    ]
    plan = plan_topology(zone, [8] * 5, max_layers=3)
    assert plan.message == ZONE_TOO_SMALL.format(held=4, size=5)
    plan = plan_topology(zone, [8] * 2, TopologyChoice(required_layer=2), 3)
    assert plan.message == NO_NETWORK_NODE_HOLDS.format(layer=2, size=2, most=1)
    assert plan_topology(zone, [8] * 2, TopologyChoice(required_layer=1), 3).nodes == ("a", "c")


def test_a_job_without_gpus_needs_no_plan() -> None:
    plan = plan_topology([], [0, 0], max_layers=3)
    assert (plan.nodes, plan.message) == (("", ""), "")


def test_a_large_zone_is_planned_whole() -> None:
    """The benchmark's zone: 256 nodes of 8 GPUs in a 2 x 4 x 8 x 4 tree, every node free; a job of
    64 one-node members takes two layer-2 domains (32 nodes each) whole, in 16 bottom domains."""
    zone = [
        TopologyNode(f"n{a}{b}{c}{d}", (f"t{a}", f"s{a}{b}", f"m{a}{b}{c}"), 8)
        for a in range(2)
        for b in range(4)
        for c in range(8)
        for d in range(4)
    ]
    plan = plan_topology(zone, [8] * 64, max_layers=3)
    assert plan.layers == (1, 2, 16)
    one_gpu = plan_topology(zone, [1] * 512, max_layers=3)
    assert one_gpu.layers == (1, 2, 16)
