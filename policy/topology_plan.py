"""Which nodes of a zone a same-zone job's members take, packed under the fewest network nodes.

The zone's nodes form a tree: the zone, its layer-1 network nodes, their layer-2 children, down to
the bottom layer, and the instances under each bottom-layer network node
(``policy.network_topology.node_path``). A node with fewer layers than the deepest read
(``max_layers``) is its own bottom-layer domain at each layer below its last; a node without the
labels is an unknown domain of its own at every layer.

``plan_topology`` chooses how many members each node takes so that, in order:

1. the fewest bottom-layer domains are used, then the fewest at each layer above, up to layer 1;
2. then the fewest nodes;
3. then the tightest fit: the least free room in the layer-1 domains used, then in each layer
   below, then in the nodes (big free domains stay whole for big jobs);
4. then the first in name order (network node ids, then node names).

This is exact, not a heuristic: a dynamic programme over the tree, each subtree's best plan for
every member count, combined child by child. Members are then numbered along the tree in name
order, so consecutive indices share a bottom-layer domain and a domain's members are consecutive.

Members are planned by GPU count: a node holds ``free // g`` members of ``g`` GPUs, ``g`` the
largest count among the job's members; a member asking fewer (but some) GPUs is planned like the
largest, and a member without GPUs (a launcher) is not placed by topology (its entry is empty).

The Go twin is ``plugin/topology``; the shared vectors are tests/vectors/topology_cases.json.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from policy.network_topology import PREFERRED_CHOICE, TopologyChoice

ZONE_TOO_SMALL = "the zone's nodes hold {held} of the job's {size} members"
"""A format: a ``preferred`` plan on a zone without room for every member."""
NO_NETWORK_NODE_HOLDS = (
    "no network node at layer {layer} holds all {size} members of the job: the most one holds is {most}"
)
"""A format: a ``required:layer-N`` plan that no single layer-N network node can hold."""

Cost = tuple[int, ...]
"""A plan's cost, compared in order: domains used at layer ``max_layers`` (the bottom) up to layer 1,
nodes used, then free room of the layer-1 domains used down to the bottom layer's, then the nodes'."""

_UNKNOWN = "node/"
"""Starts the domain name of a node without labels (a label value cannot hold ``/``)."""
_PADDING = ""
"""The domain name below a node's last layer (a label value read is never empty)."""


@dataclass(frozen=True)
class TopologyNode:
    """A node of the job's zone that the job's members may use."""

    name: str
    path: tuple[str, ...]
    """Its network nodes from layer 1 down (``node_path``); empty without the labels."""
    free_gpus: int
    """GPUs not taken by other pods or held for other jobs."""


@dataclass(frozen=True)
class TopologyPlan:
    """The nodes chosen for a job's members, or (``message`` set) why there is no plan."""

    nodes: tuple[str, ...] = ()
    """Per member, in index order: its node; empty for a member without GPUs."""
    layers: tuple[int, ...] = ()
    """Domains used per layer, layer 1 first (the last entry is the bottom layer)."""
    cost: Cost = ()
    message: str = ""


@dataclass
class _Vertex:
    depth: int
    """0 for the zone, 1..max_layers for a network node, max_layers + 1 for an instance."""
    room: int = 0
    """How many members fit in the subtree."""
    children: dict[str, "_Vertex"] = field(default_factory=dict)
    best: list[Cost] = field(default_factory=list)
    """Per member count 0..: the least cost of placing that many in the subtree."""
    splits: list[list[int]] = field(default_factory=list)
    """Per child (in name order), per member count: how many the child takes in ``best``."""


def plan_topology(
    nodes: Sequence[TopologyNode],
    members: Sequence[int],
    choice: TopologyChoice = PREFERRED_CHOICE,
    max_layers: int = 4,
) -> TopologyPlan:
    """The plan for a job whose members ask ``members[i]`` GPUs each (index order), on ``nodes``."""
    gpus = max(members, default=0)
    ranks = [index for index, count in enumerate(members) if count > 0]
    if not ranks:
        return TopologyPlan(nodes=("",) * len(members), layers=(0,) * max_layers, cost=_zero(max_layers))
    size = len(ranks)
    layer = choice.required_layer
    usable = [node for node in nodes if node.free_gpus // gpus > 0 and len(node.path) >= layer]
    root = _tree(usable, gpus, max_layers)
    _solve(root, size, max_layers)
    if layer == 0:
        if root.room < size:
            return TopologyPlan(message=ZONE_TOO_SMALL.format(held=root.room, size=size))
        counts = _counts(root, size)
    else:
        chosen = _best_domain(root, layer, size, max_layers)
        if chosen is None:
            most = max((vertex.room for vertex in _at_depth(root, layer)), default=0)
            return TopologyPlan(message=NO_NETWORK_NODE_HOLDS.format(layer=layer, size=size, most=most))
        counts = _counts(chosen, size)
    assignment = [""] * len(members)
    slots = iter(ranks)
    for name, count in counts.items():
        for _ in range(count):
            assignment[next(slots)] = name
    layers, cost = plan_cost(usable, counts, gpus, max_layers)
    return TopologyPlan(nodes=tuple(assignment), layers=layers, cost=cost)


def _zero(max_layers: int) -> Cost:
    return (0,) * (2 * max_layers + 2)


def _padded(node: TopologyNode, max_layers: int) -> tuple[str, ...]:
    path = node.path[:max_layers] if node.path else (_UNKNOWN + node.name,)
    return path + (_PADDING,) * (max_layers - len(path))


def _tree(nodes: Sequence[TopologyNode], gpus: int, max_layers: int) -> _Vertex:
    root = _Vertex(depth=0)
    for node in nodes:
        room = node.free_gpus // gpus
        vertex = root
        vertex.room += room
        for depth, name in enumerate(_padded(node, max_layers), start=1):
            vertex = vertex.children.setdefault(name, _Vertex(depth=depth))
            vertex.room += room
        vertex.children[node.name] = _Vertex(depth=max_layers + 1, room=room)
    return root


def _own(vertex: _Vertex, max_layers: int) -> Cost:
    """What using ``vertex`` adds to a plan's cost (nothing for the zone)."""
    cost = [0] * (2 * max_layers + 2)
    if vertex.depth > max_layers:
        cost[max_layers] = 1
        cost[2 * max_layers + 1] = vertex.room
    elif vertex.depth > 0:
        cost[max_layers - vertex.depth] = 1
        cost[max_layers + vertex.depth] = vertex.room
    return tuple(cost)


def _add(left: Cost, right: Cost) -> Cost:
    return tuple(a + b for a, b in zip(left, right, strict=True))


def _solve(vertex: _Vertex, size: int, max_layers: int) -> None:
    """Fill ``best`` and ``splits`` of ``vertex`` and its subtree, for up to ``size`` members."""
    limit = min(size, vertex.room)
    own = _own(vertex, max_layers)
    if not vertex.children:
        vertex.best = [_zero(max_layers)] + [own] * limit
        return
    best: list[Cost] = [_zero(max_layers)]
    for name in sorted(vertex.children):
        child = vertex.children[name]
        _solve(child, size, max_layers)
        combined: list[Cost] = []
        split: list[int] = []
        for total in range(min(limit, len(best) - 1 + len(child.best) - 1) + 1):
            least: Cost | None = None
            taken = 0
            for count in range(max(0, total - len(best) + 1), min(total, len(child.best) - 1) + 1):
                cost = _add(best[total - count], child.best[count])
                if least is None or cost < least:
                    least, taken = cost, count
            assert least is not None
            combined.append(least)
            split.append(taken)
        best = combined
        vertex.splits.append(split)
    vertex.best = [best[0]] + [_add(cost, own) for cost in best[1:]] if vertex.depth > 0 else best


def _counts(vertex: _Vertex, total: int) -> dict[str, int]:
    """How many members each node under ``vertex`` takes in its best plan for ``total``, in tree
    order (names sorted at every layer)."""
    names = sorted(vertex.children)
    takes = [0] * len(names)
    remaining = total
    for index in range(len(names) - 1, -1, -1):
        takes[index] = vertex.splits[index][remaining]
        remaining -= takes[index]
    counts: dict[str, int] = {}
    for name, take in zip(names, takes, strict=True):
        child = vertex.children[name]
        if take and child.children:
            counts.update(_counts(child, take))
        elif take:
            counts[name] = take
    return counts


def _at_depth(vertex: _Vertex, depth: int) -> list[_Vertex]:
    if vertex.depth == depth:
        return [vertex]
    return [found for name in sorted(vertex.children) for found in _at_depth(vertex.children[name], depth)]


def _best_domain(root: _Vertex, layer: int, size: int, max_layers: int) -> _Vertex | None:
    """The layer-``layer`` network node whose best plan for ``size`` members, with its ancestors'
    share of the cost, is least (the first in name order among equals); None when none holds them."""
    best: tuple[Cost, _Vertex] | None = None

    def visit(vertex: _Vertex, above: Cost) -> None:
        nonlocal best
        if vertex.depth == layer:
            if vertex.room >= size:
                cost = _add(above, vertex.best[size])
                if best is None or cost < best[0]:
                    best = (cost, vertex)
            return
        here = _add(above, _own(vertex, max_layers))
        for name in sorted(vertex.children):
            visit(vertex.children[name], here)

    visit(root, _zero(max_layers))
    return None if best is None else best[1]


def plan_cost(
    nodes: Sequence[TopologyNode], counts: dict[str, int], gpus: int, max_layers: int
) -> tuple[tuple[int, ...], Cost]:
    """The domains per layer (layer 1 first) and the ``Cost`` of ``counts`` members per node
    name on ``nodes`` (the free room of a domain counts every node given, used or not)."""
    room: dict[tuple[str, ...], int] = {}
    used: set[tuple[str, ...]] = set()
    node_room = 0
    for node in nodes:
        path = _padded(node, max_layers)
        node_fits = node.free_gpus // gpus
        for depth in range(1, max_layers + 1):
            room[path[:depth]] = room.get(path[:depth], 0) + node_fits
            if counts.get(node.name, 0):
                used.add(path[:depth])
        if counts.get(node.name, 0):
            node_room += node_fits
    per_layer = [sum(1 for key in used if len(key) == depth) for depth in range(1, max_layers + 1)]
    rooms = [sum(room[key] for key in used if len(key) == depth) for depth in range(1, max_layers + 1)]
    nodes_used = sum(1 for count in counts.values() if count)
    cost = (*reversed(per_layer), nodes_used, *rooms, node_room)
    return tuple(per_layer), cost
