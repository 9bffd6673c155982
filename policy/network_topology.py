"""Network topology inside a zone: a same-zone job's choice, and where each node sits in the network.

On EKS, nodes of the training instance types carry the labels
``topology.k8s.aws/network-node-layer-1`` (the top of the network) to ``-3`` (the bottom), and
``-4`` (then the bottom) on four-layer types, written by the AWS cloud-controller-manager when the
node joins. Each value names the network node the instance hangs under at that layer. Ranks that
share a bottom-layer network node talk fastest; every layer climbed costs bandwidth and latency.

A member of a same-zone job (``policy.job_zone``) chooses with the pod annotation
``training.example.com/network-topology``:

- ``preferred`` (the default when the annotation is absent): the fewest bottom-layer network
  nodes, then the fewest at each layer above (``policy.topology_plan``);
- ``required:layer-N``: every member under one network node of layer N (1 is the top), or no
  member binds. Nodes without the layer-N label are never used for it.

Pure: the caller gives the annotations and the labels.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from policy.errors import PolicyError
from policy.integers import parse_go_int64

NETWORK_TOPOLOGY_ANNOTATION = "training.example.com/network-topology"
"""Pod annotation: a same-zone job's network topology choice (``preferred`` or ``required:layer-N``)."""
PREFERRED = "preferred"
"""The choice's value for the fewest network nodes, climbing a layer only when the job needs it."""
REQUIRED_PREFIX = "required:layer-"
"""The choice's value for "every member under one network node of layer N", before N."""
LAYER_LABEL_PREFIX = "topology.k8s.aws/network-node-layer-"
"""Node labels ``<prefix>1`` (top) .. ``<prefix>N`` (bottom): the network node above the instance."""
MAX_LAYERS = 4
"""The default number of layers read from a node (EC2's deepest instance topology has four)."""
LAYER_LIMIT = 16
"""The largest value ``max_layers`` may be set to."""

INVALID_TOPOLOGY = "network topology must be preferred or required:layer-N with N from 1 to {layers}"
"""A format: ``INVALID_TOPOLOGY.format(layers=settings.max_layers)``."""
TOPOLOGY_WITHOUT_ZONE_POLICY = "network topology requires zone policy same-zone"


@dataclass(frozen=True)
class TopologySettings:
    """The keys the topology rule reads and how many layers it reads; defaults as above."""

    annotation: str = NETWORK_TOPOLOGY_ANNOTATION
    layer_label_prefix: str = LAYER_LABEL_PREFIX
    max_layers: int = MAX_LAYERS

    def __post_init__(self) -> None:
        for name in ("annotation", "layer_label_prefix"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"network topology setting {name} must be a non-empty string")
        layers = self.max_layers
        if isinstance(layers, bool) or not isinstance(layers, int) or not 1 <= layers <= LAYER_LIMIT:
            raise ValueError(f"network topology setting max_layers must be an integer 1..{LAYER_LIMIT}")

    def layer_label(self, layer: int) -> str:
        """The node label of ``layer`` (1 is the top)."""
        return f"{self.layer_label_prefix}{layer}"


DEFAULT_TOPOLOGY_SETTINGS = TopologySettings()


@dataclass(frozen=True)
class TopologyChoice:
    """A same-zone job's network topology choice."""

    required_layer: int = 0
    """0 for ``preferred``; otherwise the layer (1 is the top) one network node of which must hold
    every member."""

    @property
    def preferred(self) -> bool:
        """True for ``preferred``."""
        return self.required_layer == 0

    def __str__(self) -> str:
        return PREFERRED if self.preferred else f"{REQUIRED_PREFIX}{self.required_layer}"


PREFERRED_CHOICE = TopologyChoice()


def parse_topology_choice(
    raw: str | None, settings: TopologySettings = DEFAULT_TOPOLOGY_SETTINGS
) -> TopologyChoice:
    """The choice an annotation value states: absent is ``preferred``. PolicyError with
    ``INVALID_TOPOLOGY`` for any other value than ``preferred`` or ``required:layer-N``, N a base-10
    integer 1..max_layers (Go ``strconv.ParseInt`` rules, values case-sensitive)."""
    if raw is None or raw == PREFERRED:
        return PREFERRED_CHOICE
    layer = parse_go_int64(raw[len(REQUIRED_PREFIX) :]) if raw.startswith(REQUIRED_PREFIX) else None
    if layer is None or not 1 <= layer <= settings.max_layers:
        raise PolicyError(INVALID_TOPOLOGY.format(layers=settings.max_layers))
    return TopologyChoice(required_layer=layer)


def node_path(
    labels: Mapping[str, str], settings: TopologySettings = DEFAULT_TOPOLOGY_SETTINGS
) -> tuple[str, ...]:
    """The node's network nodes from the top layer down: the values of layer 1, 2, ... as far as
    they run without a gap (an empty value counts as absent). Empty for a node without the labels;
    at most ``max_layers`` long. The last entry is the node's bottom-layer network node."""
    path: list[str] = []
    for layer in range(1, settings.max_layers + 1):
        value = labels.get(settings.layer_label(layer))
        if not value:
            break
        path.append(value)
    return tuple(path)
