"""A model of EC2's network topology inside a zone: the labels the local cluster's nodes get.

EC2 describes where an instance sits in its network as one network node per layer, top first
(``DescribeInstanceTopology``); on EKS the AWS cloud-controller-manager copies them onto the Node as
``topology.k8s.aws/network-node-layer-1`` (top) to ``-3``, and ``-4`` on four-layer types. Their
values are opaque ids shaped ``nn-`` + 17 hex digits. Instance types EC2 gives no topology get no
such labels.

The model builds one tree of network nodes per zone and per depth (three or four layers), of a
configurable shape, with ids drawn from a seed, and places node names into its bottom-layer network
nodes: the same seed and the same order of arrival give the same labels. It only models; nothing
here talks to AWS or Kubernetes (``localcluster.plane.topology_labeller`` writes the labels).
"""

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

NETWORK_NODE_LABEL_PREFIX = "topology.k8s.aws/network-node-layer-"
"""Followed by the layer, 1 (top) to 3 or 4 (bottom)."""

INSTANCE_TOPOLOGY_SOURCE = (
    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html"
)
"""Where ``TOPOLOGY_SIZES`` comes from: the EC2 User Guide, "Prerequisites for Amazon EC2
topology", "Instance types" (the number of network nodes ``DescribeInstanceTopology`` returns)."""

TOPOLOGY_SIZES: Mapping[int, Mapping[str, tuple[str, ...]]] = {
    3: {
        "g6e": ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"),
        "g7e": ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"),
        "hpc6a": ("48xlarge",),
        "hpc6id": ("32xlarge",),
        "hpc7g": ("4xlarge", "8xlarge", "16xlarge"),
        "hpc7a": ("12xlarge", "24xlarge", "48xlarge", "96xlarge"),
        "hpc8a": ("96xlarge",),
        "p3dn": ("24xlarge",),
        "p4d": ("24xlarge",),
        "p4de": ("24xlarge",),
        "p5": ("48xlarge",),
        "p5e": ("48xlarge",),
        "p5en": ("48xlarge",),
        "p6e-gb200": ("36xlarge",),
        "trn1": ("2xlarge", "32xlarge"),
        "trn1n": ("32xlarge",),
        "trn2": ("48xlarge",),
        "trn2u": ("48xlarge",),
    },
    4: {
        "p6-b200": ("48xlarge",),
        "p6-b300": ("48xlarge",),
    },
}
"""Per number of network nodes EC2 describes, the instance types (family and sizes) it describes
so (``INSTANCE_TOPOLOGY_SOURCE``). Other types get no topology."""

LAYER_COUNTS = (3, 4)
"""The depths EC2 describes; a tree has one of them."""

Placement = Literal["scatter", "fill"]
"""How a new node finds its bottom-layer network node. ``scatter``: one with room, drawn from the
model's seed (EC2 cannot launch an instance close to another, so a launched node may land anywhere);
``fill``: the first with room in tree order (a packed, predictable fleet)."""
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)

MAX_BOTTOM_NODES = 65536
"""The most bottom-layer network nodes one tree may have (the default of ``TreeShape.parse``'s
``max_bottom_nodes``): a bound on the memory a mistyped shape takes."""

NETWORK_NODE_ID_HEX_DIGITS = 17


class TopologyError(ValueError):
    """A tree shape or a placement the model cannot honour."""


def network_node_label(layer: int) -> str:
    """The label key of ``layer`` (1 is the top)."""
    return f"{NETWORK_NODE_LABEL_PREFIX}{layer}"


def topology_layers(instance_type: str) -> int:
    """How many network nodes EC2 describes for an instance of this type; 0 when it gives none."""
    family, _, size = instance_type.partition(".")
    return next((layers for layers, sizes in TOPOLOGY_SIZES.items() if size in sizes.get(family, ())), 0)


def topology_labels(path: tuple[str, ...]) -> dict[str, str]:
    """The Node labels for a network-node path (top first), as the cloud-controller-manager writes them."""
    return {network_node_label(layer): name for layer, name in enumerate(path, start=1)}


@dataclass(frozen=True)
class TreeShape:
    """The shape of one zone's tree: how many network nodes hang under each node of the layer above,
    top layer first (``fan_out[0]`` is the number of layer-1 nodes), and how many instances one
    bottom-layer network node connects. Written ``2x4x8x4``: three layers of 2, 4 and 8, and 4
    instances under each of the 64 bottom-layer nodes (256 instances)."""

    fan_out: tuple[int, ...]
    instances_per_node: int

    def __post_init__(self) -> None:
        if len(self.fan_out) not in LAYER_COUNTS:
            raise TopologyError(f"a tree has 3 or 4 layers, not {len(self.fan_out)} (shape {self})")
        if min(*self.fan_out, self.instances_per_node) < 1:
            raise TopologyError(f"every number of a tree shape must be positive (shape {self})")

    @property
    def layers(self) -> int:
        return len(self.fan_out)

    @property
    def bottom_nodes(self) -> int:
        return math.prod(self.fan_out)

    @property
    def capacity(self) -> int:
        """How many instances the tree can place."""
        return self.bottom_nodes * self.instances_per_node

    def __str__(self) -> str:
        return "x".join(str(number) for number in (*self.fan_out, self.instances_per_node))

    @classmethod
    def parse(cls, text: str, max_bottom_nodes: int = MAX_BOTTOM_NODES) -> "TreeShape":
        """``AxBxC[xD]xN``: the fan-out of each layer, top first, then instances per bottom node."""
        parts = text.strip().lower().split("x")
        if not all(part.isascii() and part.isdigit() for part in parts) or len(parts) - 1 not in LAYER_COUNTS:
            raise TopologyError(
                f"tree shape {text!r}: expected 3 or 4 layer fan-outs and the instances under each "
                "bottom-layer network node, joined by 'x' (for example 2x4x8x4)"
            )
        numbers = [int(part) for part in parts]
        shape = cls(tuple(numbers[:-1]), numbers[-1])
        if shape.bottom_nodes > max_bottom_nodes:
            raise TopologyError(
                f"tree shape {text!r} has {shape.bottom_nodes} bottom-layer network nodes; "
                f"at most {max_bottom_nodes} are allowed"
            )
        return shape


DEFAULT_TREES: Mapping[int, TreeShape] = {
    3: TreeShape((2, 4, 8), 4),
    4: TreeShape((2, 2, 4, 4), 4),
}
"""Per depth, 256 instances a zone: the benchmark's 2 x 4 x 8 x 4 tree for three-layer types; for
four-layer types one more layer of the same width. Chosen shapes, not AWS's (which it does not
publish)."""


@dataclass
class NetworkTree:
    """One zone's network nodes of one depth, and the instances placed under them."""

    shape: TreeShape
    bottom_paths: tuple[tuple[str, ...], ...]
    """Every bottom-layer network node as its path from the top, in tree order."""
    members: list[list[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.members = [[] for _ in self.bottom_paths]

    def with_room(self) -> list[int]:
        """Indices of the bottom-layer network nodes that can take one more instance."""
        room = self.shape.instances_per_node
        return [index for index, placed in enumerate(self.members) if len(placed) < room]


class NetworkTopologyModel:
    """Network trees per zone and depth, built from ``seed`` on first use, and where each node sits.

    ``place`` is idempotent per node name; with the same seed, trees and placement, the same
    sequence of ``place`` calls gives the same paths."""

    def __init__(
        self,
        seed: int | str = 0,
        trees: Mapping[int, TreeShape] = DEFAULT_TREES,
        placement: Placement = "scatter",
    ) -> None:
        if placement not in PLACEMENTS:
            raise TopologyError(f"placement {placement!r}: expected one of {', '.join(PLACEMENTS)}")
        for layers, shape in trees.items():
            if shape.layers != layers:
                raise TopologyError(f"the {layers}-layer tree has shape {shape}, of {shape.layers} layers")
        self.seed = seed
        self.trees = dict(trees)
        self.placement = placement
        self._zones: dict[tuple[str, int], NetworkTree] = {}
        self._ids: set[str] = set()
        self._paths: dict[str, tuple[str, ...]] = {}
        self._generators: dict[str, random.Random] = {}

    def tree(self, zone: str, layers: int) -> NetworkTree:
        """The zone's tree of that depth (built on first use)."""
        key = (zone, layers)
        if key not in self._zones:
            if layers not in self.trees:
                raise TopologyError(f"no {layers}-layer tree is configured")
            self._zones[key] = self._build(zone, self.trees[layers])
        return self._zones[key]

    def place(self, node_name: str, instance_type: str, zone: str) -> tuple[str, ...] | None:
        """The node's network-node path, top first, choosing a bottom-layer network node with room
        on first call; None for an instance type EC2 gives no topology. A full tree raises
        ``TopologyError``."""
        if node_name in self._paths:
            return self._paths[node_name]
        layers = topology_layers(instance_type)
        if not layers:
            return None
        tree = self.tree(zone, layers)
        free = tree.with_room()
        if not free:
            raise TopologyError(
                f"zone {zone!r} has no room for another {layers}-layer instance: its tree {tree.shape} "
                f"holds {tree.shape.capacity}; configure a larger tree"
            )
        index = free[0] if self.placement == "fill" else self._rng(zone, layers, "place").choice(free)
        tree.members[index].append(node_name)
        self._paths[node_name] = tree.bottom_paths[index]
        return tree.bottom_paths[index]

    def labels(self, node_name: str, instance_type: str, zone: str) -> dict[str, str]:
        """The node's network-node labels (placing it if new); empty for a type without topology."""
        path = self.place(node_name, instance_type, zone)
        return topology_labels(path) if path is not None else {}

    def path_of(self, node_name: str) -> tuple[str, ...] | None:
        """Where a placed node sits; None for one never placed."""
        return self._paths.get(node_name)

    def _rng(self, zone: str, layers: int, purpose: str) -> random.Random:
        """One generator per zone, depth and purpose, kept so that draws continue a sequence."""
        key = f"{self.seed}/{zone}/{layers}/{purpose}"
        if key not in self._generators:
            self._generators[key] = random.Random(key)  # noqa: S311 - a model, not security
        return self._generators[key]

    def _build(self, zone: str, shape: TreeShape) -> NetworkTree:
        rng = self._rng(zone, shape.layers, "ids")
        paths: list[tuple[str, ...]] = [()]
        for width in shape.fan_out:
            paths = [(*parent, self._new_id(rng)) for parent in paths for _ in range(width)]
        return NetworkTree(shape, tuple(paths))

    def _new_id(self, rng: random.Random) -> str:
        while True:
            name = f"nn-{rng.getrandbits(4 * NETWORK_NODE_ID_HEX_DIGITS):0{NETWORK_NODE_ID_HEX_DIGITS}x}"
            if name not in self._ids:
                self._ids.add(name)
                return name
