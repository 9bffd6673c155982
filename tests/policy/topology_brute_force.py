"""The topology planner's rule, checked the slow way: every way to spread a job over a few nodes.

``optimum`` tries every count of members per node and keeps the least cost, computing the cost
from the rule as docs/topology.md states it, without the planner's tree. ``generated_cases``
draws small zones from a fixed seed and records their optimum for tests/vectors/topology_cases.json
(``python -m tests.policy.topology_brute_force`` rewrites that section), so the Go planner is held
to the same optimum.
"""

import json
import random
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from policy.network_topology import TopologySettings, node_path
from tests.vectors import VECTORS_DIR

FILE = "topology_cases.json"
SEED = 55
GENERATED = 60
"""Zones of random shape, some nodes unlabelled or with fewer layers."""
GENERATED_FULL_TREES = 40
"""Three-layer trees with one node per bottom domain: the shapes where counting the bottom layer
first and counting the top first disagree."""


def domain_key(name: str, path: tuple[str, ...], layer: int) -> tuple[str, ...]:
    """The node's network domain at ``layer``: the network node it hangs under there; below its last
    labelled layer its bottom network node stands for each missing layer; unlabelled, itself."""
    if not path:
        return ("unlabelled", name)
    if layer <= len(path):
        return ("network", *path[:layer])
    return ("below", str(layer), *path)


def cost(
    nodes: Sequence[tuple[str, tuple[str, ...], int]], counts: dict[str, int], gpus: int, layers: int
) -> tuple[int, ...]:
    """The plan's cost: domains used from the bottom layer up, nodes used, then the room of the
    domains used from layer 1 down, then of the nodes used. ``nodes``: (name, path, free GPUs)."""
    used = [(name, path, free) for name, path, free in nodes if counts.get(name, 0)]
    counts_per_layer = []
    rooms_per_layer = []
    for layer in range(1, layers + 1):
        keys = {domain_key(name, path, layer) for name, path, _ in used}
        counts_per_layer.append(len(keys))
        rooms_per_layer.append(
            sum(free // gpus for name, path, free in nodes if domain_key(name, path, layer) in keys)
        )
    return (
        *reversed(counts_per_layer),
        len(used),
        *rooms_per_layer,
        sum(free // gpus for _, _, free in used),
    )


def spreads(rooms: Sequence[int], total: int) -> Iterator[tuple[int, ...]]:
    """Every way to put ``total`` members on nodes holding ``rooms[i]`` each."""
    if not rooms:
        if total == 0:
            yield ()
        return
    rest = sum(rooms[1:])
    for here in range(max(0, total - rest), min(rooms[0], total) + 1):
        for tail in spreads(rooms[1:], total - here):
            yield (here, *tail)


def optimum(
    nodes: Sequence[tuple[str, tuple[str, ...], int]],
    members: Sequence[int],
    required_layer: int,
    layers: int,
) -> tuple[int, ...] | None:
    """The least cost of any plan, or None when no plan holds the job."""
    gpus = max(members, default=0)
    size = sum(1 for count in members if count > 0)
    if size == 0:
        return (0,) * (2 * layers + 2)
    usable = [node for node in nodes if node[2] // gpus > 0 and len(node[1]) >= required_layer]
    best: tuple[int, ...] | None = None
    for spread in spreads([free // gpus for _, _, free in usable], size):
        counts = {name: count for (name, _, _), count in zip(usable, spread, strict=True)}
        if required_layer:
            tops = {
                path[:required_layer] for (_, path, _), count in zip(usable, spread, strict=True) if count
            }
            if len(tops) > 1:
                continue
        value = cost(usable, counts, gpus, layers)
        if best is None or value < best:
            best = value
    return best


def random_zone(chooser: random.Random, layers: int) -> list[dict[str, Any]]:
    """A few nodes of a small random network tree, some without labels or with fewer layers."""
    nodes = []
    for index in range(chooser.randint(2, 7)):
        depth = chooser.choice([0, *[layers] * 4, max(1, layers - 1)])
        labels = {
            f"topology.k8s.aws/network-node-layer-{layer}": f"nn-{layer}{chooser.choice('ab')}"
            for layer in range(1, depth + 1)
        }
        nodes.append(
            {"name": f"node-{index}", "labels": labels, "free_gpus": chooser.choice([0, 2, 4, 8, 8, 8])}
        )
    return nodes


def full_tree(chooser: random.Random) -> list[dict[str, Any]]:
    """A three-layer tree: two layer-1 network nodes, one or two under each, one to three under
    those, and one node of 0, 2, 4 or 8 free GPUs per bottom domain."""
    nodes = []
    for top in range(2):
        for middle in range(chooser.randint(1, 2)):
            for bottom in range(chooser.randint(1, 3)):
                path = (f"nn-t{top}", f"nn-s{top}{middle}", f"nn-b{top}{middle}{bottom}")
                labels = {
                    f"topology.k8s.aws/network-node-layer-{layer}": value
                    for layer, value in enumerate(path, 1)
                }
                nodes.append(
                    {
                        "name": f"node-{top}{middle}{bottom}",
                        "labels": labels,
                        "free_gpus": chooser.randint(0, 8),
                    }
                )
    return nodes


def generated_cases(
    seed: int = SEED, count: int = GENERATED, full_trees: int = GENERATED_FULL_TREES
) -> list[dict[str, Any]]:
    """``count`` random zones and ``full_trees`` full trees, each with a job and the brute-force
    optimum (null when no plan holds the job)."""
    chooser = random.Random(seed)
    cases = []
    for index in range(count + full_trees):
        tree = index >= count
        layers = 3 if tree else chooser.choice([3, 4])
        nodes = full_tree(chooser) if tree else random_zone(chooser, layers)
        gpus = 2 if tree else chooser.choice([1, 2, 4, 8, 8])
        members = [gpus] * chooser.randint(1, 8 if tree else 5) + [0] * chooser.choice([0, 0, 1])
        required = chooser.choice([0, 0, 0, 1, 2, layers])
        settings = TopologySettings(max_layers=layers)
        triples = [(node["name"], node_path(node["labels"], settings), node["free_gpus"]) for node in nodes]
        best = optimum(triples, members, required, layers)
        cases.append(
            {
                "name": f"generated-{index}",
                "max_layers": layers,
                "nodes": nodes,
                "members": members,
                "choice": f"required:layer-{required}" if required else "preferred",
                "optimum": None if best is None else list(best),
            }
        )
    return cases


def main() -> None:
    """Rewrite the ``generated`` section of the shared vector file."""
    path = VECTORS_DIR / FILE
    document = json.loads(path.read_text(encoding="utf-8"))
    document["generated"] = generated_cases()
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {len(document['generated'])} generated cases to {path}\n")


if __name__ == "__main__":
    main()
