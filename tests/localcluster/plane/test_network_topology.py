"""The network-topology model: EC2's types with topology, tree shapes, ids, placement."""

import re
from collections import Counter

import pytest

from localcluster.plane.inventory import DEMO_INSTANCE_TYPES
from localcluster.plane.network_topology import (
    DEFAULT_TREES,
    MAX_BOTTOM_NODES,
    NETWORK_NODE_LABEL_PREFIX,
    TOPOLOGY_SIZES,
    NetworkTopologyModel,
    TopologyError,
    TreeShape,
    network_node_label,
    topology_labels,
    topology_layers,
)
from render.ec2_catalogue import load_snapshot

NETWORK_NODE_ID = re.compile(r"nn-[0-9a-f]{17}")
ZONE = "us-east-1a"


@pytest.mark.parametrize(
    ("instance_type", "layers"),
    [
        ("p5.48xlarge", 3),
        ("p4d.24xlarge", 3),
        ("g6e.xlarge", 3),
        ("trn1.2xlarge", 3),
        ("p6e-gb200.36xlarge", 3),
        ("p6-b200.48xlarge", 4),
        ("p6-b300.48xlarge", 4),
        ("g7e.xlarge", 0),  # g7e from 2xlarge only
        ("p5.4xlarge", 0),  # the single-GPU p5 is not listed
        ("g5.48xlarge", 0),
        ("m5.xlarge", 0),
        ("p5", 0),
        ("", 0),
    ],
)
def test_the_depth_is_ec2s_for_each_instance_type(instance_type: str, layers: int) -> None:
    assert topology_layers(instance_type) == layers


def test_of_the_demo_fleet_only_the_training_types_have_topology() -> None:
    with_topology = {name for name in DEMO_INSTANCE_TYPES if topology_layers(name)}
    assert with_topology == {"g6e.xlarge", "p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge"}


def test_the_listed_types_are_spelled_as_ec2_names_them() -> None:
    """A guard on the data: a misspelt family or size would leave its nodes silently unlabelled. Every
    listed type of a family the project's EC2 snapshot holds is in the snapshot."""
    snapshot = set(load_snapshot().by_name())
    families = {name.partition(".")[0] for name in snapshot}
    listed = [
        f"{family}.{size}"
        for sizes_by_family in TOPOLOGY_SIZES.values()
        for family, sizes in sizes_by_family.items()
        for size in sizes
    ]
    checked = [name for name in listed if name.partition(".")[0] in families]
    assert {"p4d.24xlarge", "p5.48xlarge", "p6-b200.48xlarge"} <= set(checked)
    assert sorted(set(checked) - snapshot) == []


def test_labels_name_each_layer_top_first() -> None:
    assert topology_labels(("nn-a", "nn-b", "nn-c")) == {
        f"{NETWORK_NODE_LABEL_PREFIX}1": "nn-a",
        f"{NETWORK_NODE_LABEL_PREFIX}2": "nn-b",
        f"{NETWORK_NODE_LABEL_PREFIX}3": "nn-c",
    }
    assert network_node_label(4) == "topology.k8s.aws/network-node-layer-4"


def test_a_three_layer_type_gets_three_ec2_shaped_labels_and_a_type_without_topology_none() -> None:
    model = NetworkTopologyModel()
    labels = model.labels("p5-1", "p5.48xlarge", ZONE)
    assert sorted(labels) == [network_node_label(layer) for layer in (1, 2, 3)]
    assert all(NETWORK_NODE_ID.fullmatch(value) for value in labels.values())
    assert model.labels("m5-1", "m5.xlarge", ZONE) == {}
    assert model.place("m5-1", "m5.xlarge", ZONE) is None
    assert model.path_of("m5-1") is None


def test_a_four_layer_type_gets_four_labels_from_a_tree_of_its_own() -> None:
    model = NetworkTopologyModel()
    four = model.labels("b200-1", "p6-b200.48xlarge", ZONE)
    three = model.labels("p5-1", "p5.48xlarge", ZONE)
    assert sorted(four) == [network_node_label(layer) for layer in (1, 2, 3, 4)]
    assert not set(four.values()) & set(three.values())


def test_the_same_seed_and_order_give_the_same_labels_and_another_seed_others() -> None:
    names = [f"p5-{index}" for index in range(20)]

    def labels(seed: str) -> list[dict[str, str]]:
        model = NetworkTopologyModel(seed)
        return [model.labels(name, "p5.48xlarge", ZONE) for name in names]

    assert labels("7") == labels("7")
    assert labels("7") != labels("8")


def test_placing_a_node_again_returns_its_place_and_takes_no_more_room() -> None:
    model = NetworkTopologyModel(trees={3: TreeShape((1, 1, 1), 2)})
    first = model.place("p5-1", "p5.48xlarge", ZONE)
    assert model.place("p5-1", "p5.48xlarge", ZONE) == first
    assert model.place("p5-2", "p5.48xlarge", ZONE) == first  # the second seat of the one bottom node
    assert model.path_of("p5-1") == first


def test_a_full_tree_says_so_and_places_nothing_more() -> None:
    model = NetworkTopologyModel(trees={3: TreeShape((1, 1, 2), 1)})
    model.place("p5-1", "p5.48xlarge", ZONE)
    model.place("p5-2", "p5.48xlarge", ZONE)
    with pytest.raises(TopologyError, match="no room for another 3-layer instance: its tree 1x1x2x1 holds 2"):
        model.place("p5-3", "p5.48xlarge", ZONE)
    assert model.path_of("p5-3") is None
    assert model.place("p5-3", "p5.48xlarge", "us-east-1b") is not None  # another zone, another tree


def test_a_type_of_a_depth_without_a_tree_is_an_error() -> None:
    model = NetworkTopologyModel(trees={3: DEFAULT_TREES[3]})
    with pytest.raises(TopologyError, match="no 4-layer tree is configured"):
        model.place("b200-1", "p6-b200.48xlarge", ZONE)


def _place_all(placement: str, count: int = 256) -> tuple[NetworkTopologyModel, list[tuple[str, ...]]]:
    model = NetworkTopologyModel("bench", placement=placement)  # type: ignore[arg-type]
    paths = [model.place(f"p5-{index}", "p5.48xlarge", ZONE) for index in range(count)]
    assert all(path is not None for path in paths)
    return model, [path for path in paths if path is not None]


@pytest.mark.parametrize("placement", ["fill", "scatter"])
def test_the_default_tree_is_2x4x8_with_4_instances_under_each_bottom_node(placement: str) -> None:
    model, paths = _place_all(placement)
    assert Counter(path[2] for path in paths) == Counter(dict.fromkeys({path[2] for path in paths}, 4))
    assert [len({path[layer] for path in paths}) for layer in range(3)] == [2, 8, 64]
    parents = {(path[layer + 1], path[layer]) for path in paths for layer in range(2)}
    assert len(parents) == 8 + 64  # one parent per network node: a tree, not a mesh
    ids = [name for path in set(paths) for name in path]
    assert len(set(ids)) == 2 + 8 + 64
    with pytest.raises(TopologyError):
        model.place("p5-256", "p5.48xlarge", ZONE)


def test_fill_packs_bottom_nodes_in_tree_order_and_scatter_does_not() -> None:
    _, filled = _place_all("fill", 8)
    assert [path[2] for path in filled] == [filled[0][2]] * 4 + [filled[4][2]] * 4
    assert filled[0][:2] == filled[4][:2]  # the next bottom node is a sibling
    _, scattered = _place_all("scatter", 8)
    assert len({path[2] for path in scattered}) > 2


def test_zones_have_trees_of_their_own() -> None:
    model = NetworkTopologyModel()
    a = model.labels("p5-a", "p5.48xlarge", "us-east-1a")
    b = model.labels("p5-b", "p5.48xlarge", "us-east-1b")
    assert not set(a.values()) & set(b.values())


@pytest.mark.parametrize("text", ["2x4x8x4", "2x2x4x4x4", "1x1x1x1", " 2X4x8x4 "])
def test_a_tree_shape_reads_and_prints_back(text: str) -> None:
    shape = TreeShape.parse(text)
    assert str(shape) == text.strip().lower()
    assert shape.capacity == shape.bottom_nodes * shape.instances_per_node


def test_the_benchmarks_shape_holds_256_instances() -> None:
    shape = TreeShape.parse("2x4x8x4")
    assert (shape.layers, shape.bottom_nodes, shape.capacity) == (3, 64, 256)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2x4x4", "3 or 4 layer fan-outs"),
        ("2x4x8x4x4x4", "3 or 4 layer fan-outs"),
        ("2x4x8xfour", "3 or 4 layer fan-outs"),
        ("", "3 or 4 layer fan-outs"),
        ("2x-4x8x4", "3 or 4 layer fan-outs"),
        ("\uff12x4x8x4", "3 or 4 layer fan-outs"),  # a full-width digit is not a digit here
        ("2x0x8x4", "must be positive"),
        ("2x4x8x0", "must be positive"),
        ("256x256x2x1", f"131072 bottom-layer network nodes; at most {MAX_BOTTOM_NODES}"),
    ],
)
def test_a_bad_tree_shape_gets_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(TopologyError, match=re.escape(message)):
        TreeShape.parse(text)


def test_the_bottom_node_limit_is_a_parameter() -> None:
    assert TreeShape.parse("256x256x2x1", max_bottom_nodes=131072).bottom_nodes == 131072
    with pytest.raises(TopologyError, match="at most 8 are allowed"):
        TreeShape.parse("2x4x2x1", max_bottom_nodes=8)


def test_a_model_refuses_a_tree_filed_under_another_depth_and_an_unknown_placement() -> None:
    with pytest.raises(TopologyError, match="the 4-layer tree has shape 2x4x8x4, of 3 layers"):
        NetworkTopologyModel(trees={4: TreeShape((2, 4, 8), 4)})
    with pytest.raises(TopologyError, match="placement 'nearby': expected one of scatter, fill"):
        NetworkTopologyModel(placement="nearby")  # type: ignore[arg-type]
