"""The stand-in for the cloud-controller-manager's topology labels: its decisions on their own, then
the process as the e2e cluster runs it, against the real API server."""

import dataclasses
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from localcluster.host.waiting import wait_until
from localcluster.plane.inventory import load_inventory
from localcluster.plane.network_topology import (
    NETWORK_NODE_LABEL_PREFIX,
    NetworkTopologyModel,
    TreeShape,
    network_node_label,
)
from localcluster.plane.nodes import SimulatedNode, create_nodes
from localcluster.plane.topology_labeller import (
    FIELD_MANAGER,
    RETRY_SECONDS,
    Labeller,
    ScheduledLabels,
    TopologyLabelling,
    parse_args,
)
from policy.job_zone import ZONE_LABEL
from policy.settings import INSTANCE_TYPE_LABEL
from testbed.e2e_cluster import E2ECluster, e2e_cluster

ZONE = "us-east-1a"
TYPES = load_inventory(("m5.xlarge", "g5.xlarge", "p5.48xlarge", "p6-b200.48xlarge"))


class Clock:
    """The labeller's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def seen_node(name: str, instance_type: str, uid: str = "", **labels: str) -> kubernetes.client.V1Node:
    """A Node as a watch event carries it (only what the labeller reads)."""
    return kubernetes.client.V1Node(
        metadata=kubernetes.client.V1ObjectMeta(
            name=name,
            uid=uid or f"uid-{name}",
            labels={INSTANCE_TYPE_LABEL: instance_type, ZONE_LABEL: ZONE, **labels},
        )
    )


@pytest.fixture
def lines() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def clock() -> Clock:
    return Clock()


def labeller_with(
    lines: list[dict[str, Any]], clock: Clock, model: NetworkTopologyModel | None = None, delay: float = 3.0
) -> Labeller:
    """A labeller whose API is never reached: these tests stop before it writes."""
    core = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient())
    return Labeller(core, model or NetworkTopologyModel(), delay, lines.append, clock)


def test_a_node_with_topology_falls_due_after_the_delay_with_its_place(
    lines: list[dict[str, Any]], clock: Clock
) -> None:
    labeller = labeller_with(lines, clock)
    labeller.saw(seen_node("p5-1", "p5.48xlarge"))
    assert labeller.pop_due() == pytest.approx(3.0)
    clock.now += 2.9
    assert labeller.pop_due() == pytest.approx(0.1)
    clock.now += 0.1
    due = labeller.pop_due()
    assert isinstance(due, ScheduledLabels)
    assert (due.name, due.uid, len(due.path)) == ("p5-1", "uid-p5-1", 3)
    assert labeller.pop_due() is None


def test_a_node_is_decided_on_once_whatever_later_events_say(
    lines: list[dict[str, Any]], clock: Clock
) -> None:
    labeller = labeller_with(lines, clock, delay=0)
    labeller.saw(seen_node("p5-1", "p5.48xlarge"))
    assert isinstance(labeller.pop_due(), ScheduledLabels)
    labeller.saw(seen_node("p5-1", "p5.48xlarge"))  # MODIFIED: labels changed or removed meanwhile
    assert labeller.pop_due() is None


def test_a_node_of_the_same_name_made_again_is_a_new_node(lines: list[dict[str, Any]], clock: Clock) -> None:
    labeller = labeller_with(lines, clock, delay=0)
    labeller.saw(seen_node("p5-1", "p5.48xlarge", uid="first"))
    first = labeller.pop_due()
    labeller.saw(seen_node("p5-1", "p5.48xlarge", uid="second"))
    second = labeller.pop_due()
    assert isinstance(first, ScheduledLabels)
    assert isinstance(second, ScheduledLabels)
    assert (first.uid, second.uid) == ("first", "second")


def test_nodes_fall_due_in_the_order_they_were_seen(lines: list[dict[str, Any]], clock: Clock) -> None:
    labeller = labeller_with(lines, clock)
    seen = [f"p5-{index}" for index in range(20)]
    for name in seen[:10]:  # seen at one moment: the order they were seen in decides
        labeller.saw(seen_node(name, "p5.48xlarge"))
    clock.now += 1
    for name in seen[10:]:
        labeller.saw(seen_node(name, "p5.48xlarge"))
    clock.now += 10
    names = []
    while isinstance(due := labeller.pop_due(), ScheduledLabels):
        names.append(due.name)
    assert names == seen


def test_types_without_topology_and_labelled_nodes_are_left_alone(
    lines: list[dict[str, Any]], clock: Clock
) -> None:
    labeller = labeller_with(lines, clock, delay=0)
    labeller.saw(seen_node("m5-1", "m5.xlarge"))
    labeller.saw(seen_node("p5-1", "p5.48xlarge", **{network_node_label(1): "nn-0123456789abcdef0"}))
    assert labeller.pop_due() is None
    assert lines == [
        {"msg": "no topology for this type", "node": "m5-1", "instanceType": "m5.xlarge"},
        {"msg": "already labelled", "node": "p5-1"},
    ]


def test_a_node_the_tree_has_no_room_for_is_logged_and_left_unlabelled(
    lines: list[dict[str, Any]], clock: Clock
) -> None:
    labeller = labeller_with(lines, clock, NetworkTopologyModel(trees={3: TreeShape((1, 1, 1), 1)}), delay=0)
    labeller.saw(seen_node("p5-1", "p5.48xlarge"))
    labeller.saw(seen_node("p5-2", "p5.48xlarge"))
    assert isinstance(labeller.pop_due(), ScheduledLabels)
    assert labeller.pop_due() is None
    assert lines[-1]["msg"] == "not labelled"
    assert "no room" in lines[-1]["reason"]


def test_a_labelling_the_api_server_fails_is_tried_again(lines: list[dict[str, Any]], clock: Clock) -> None:
    unreachable = kubernetes.client.Configuration()
    unreachable.host = "http://127.0.0.1:1"  # nothing listens on port 1: the connection is refused
    core = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(unreachable))
    labeller = Labeller(core, NetworkTopologyModel(), 0, lines.append, clock)
    labeller.saw(seen_node("p5-1", "p5.48xlarge"))
    due = labeller.pop_due()
    assert isinstance(due, ScheduledLabels)

    assert not labeller.attempt(due)
    assert lines[-1]["msg"] == "labelling failed; trying again"
    assert labeller.pop_due() == pytest.approx(RETRY_SECONDS)
    clock.now += RETRY_SECONDS
    again = labeller.pop_due()
    assert isinstance(again, ScheduledLabels)
    assert (again.uid, again.path) == (due.uid, due.path)


def test_settings_go_through_the_command_line_unchanged() -> None:
    settings = TopologyLabelling(
        delay_seconds=1.5, seed="bench", trees=(TreeShape.parse("1x2x3x4"),), placement="fill"
    )
    kubeconfig, parsed = parse_args(["--kubeconfig=/k", *settings.flags()])
    assert kubeconfig == "/k"
    assert parsed == dataclasses.replace(
        settings, trees=(TreeShape.parse("1x2x3x4"), TreeShape.parse("2x2x4x4x4"))
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--delay=-1"], "the labelling delay must be 0..3600 s"),
        (["--delay=3601"], "the labelling delay must be 0..3600 s"),
        (["--tree=2x4"], "tree shape '2x4'"),
        (["--placement=nearby"], "invalid choice: 'nearby'"),
    ],
)
def test_bad_flags_get_a_clear_error(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        parse_args(["--kubeconfig=/k", *flags])
    assert exit_status.value.code == 2
    assert message in capsys.readouterr().err


def test_two_trees_of_one_depth_are_refused() -> None:
    with pytest.raises(ValueError, match="one tree per depth"):
        TopologyLabelling(trees=(TreeShape.parse("2x4x8x4"), TreeShape.parse("1x1x1x1")))


# The process, as ``testbed.e2e_cluster`` starts it, against the real API server.

DELAY_SECONDS = 2
LABELS_SECONDS = 60.0
"""How long a node's labels may take to appear in these tests (the delay, and a loaded machine)."""


@pytest.fixture(scope="module")
def cluster(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2ECluster]:
    settings = TopologyLabelling(delay_seconds=DELAY_SECONDS, seed="e2e")
    with e2e_cluster(bin_dir, tmp_path_factory.mktemp("topology-labeller"), "plugin", settings) as started:
        make(started, "first", "p5.48xlarge")
        labelled(started, "first")  # the labeller is up and watching: the tests' nodes are seen as made
        yield started


def core_of(cluster: E2ECluster) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(cluster.api)


def topology_of(node: kubernetes.client.V1Node) -> dict[str, str]:
    return {k: v for k, v in (node.metadata.labels or {}).items() if k.startswith(NETWORK_NODE_LABEL_PREFIX)}


def make(cluster: E2ECluster, name: str, instance_type: str) -> None:
    """A node as the stack's node groups make it: no network-node labels."""
    create_nodes(cluster.api, [SimulatedNode(name, TYPES[instance_type], ZONE)])


def labelled(cluster: E2ECluster, name: str) -> kubernetes.client.V1Node:
    """The node once it carries network-node labels."""
    return wait_until(
        lambda: core_of(cluster).read_node(name),
        lambda node: bool(topology_of(node)),
        LABELS_SECONDS,
        f"node {name} to get its network-node labels",
        describe=lambda node: str(node.metadata.labels),
    )


def decisions(cluster: E2ECluster, node: str) -> list[str]:
    """The labeller's decisions on ``node``, from its log, once it has logged one (it logs a
    labelling after the API server has applied it)."""

    def read() -> list[str]:
        log = cluster.plane.work_dir / "topology-labeller.log"
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        return [line["msg"] for line in lines if line.get("node") == node]

    return wait_until(read, bool, LABELS_SECONDS, f"the labeller to log its decision on {node}")


def labelled_at(node: kubernetes.client.V1Node) -> datetime.datetime:
    """When the labeller's patch was applied, as the API server recorded it (whole seconds)."""
    entries = [entry for entry in node.metadata.managed_fields or () if entry.manager == FIELD_MANAGER]
    assert len(entries) == 1, [entry.manager for entry in node.metadata.managed_fields or ()]
    time: datetime.datetime = entries[0].time
    return time


def test_a_new_node_gets_its_labels_once_after_the_delay(cluster: E2ECluster) -> None:
    make(cluster, "fresh-p5", "p5.48xlarge")
    make(cluster, "fresh-b200", "p6-b200.48xlarge")
    for name, layers in (("fresh-p5", 3), ("fresh-b200", 4)):
        node = labelled(cluster, name)
        assert sorted(topology_of(node)) == [network_node_label(layer) for layer in range(1, layers + 1)]
        # Both stamps are whole seconds, the labelling's rounded down: at least the delay apart.
        assert labelled_at(node) - node.metadata.creation_timestamp >= datetime.timedelta(
            seconds=DELAY_SECONDS
        )
        assert decisions(cluster, name) == ["labelled"]


def test_a_type_without_topology_gets_no_labels(cluster: E2ECluster) -> None:
    make(cluster, "plain-m5", "m5.xlarge")
    make(cluster, "plain-g5", "g5.xlarge")
    make(cluster, "after-plain", "p5.48xlarge")
    labelled(cluster, "after-plain")  # seen after them, so they were decided on before it
    for name in ("plain-m5", "plain-g5"):
        assert topology_of(core_of(cluster).read_node(name)) == {}
        assert decisions(cluster, name) == ["no topology for this type"]


def test_a_changed_or_removed_label_is_never_written_again(cluster: E2ECluster) -> None:
    make(cluster, "changed", "p5.48xlarge")
    make(cluster, "cleared", "p5.48xlarge")
    original = topology_of(labelled(cluster, "changed"))
    cleared = topology_of(labelled(cluster, "cleared"))
    bottom = network_node_label(3)
    core = core_of(cluster)
    core.patch_node("changed", {"metadata": {"labels": {bottom: "nn-00000000000000000"}}})
    core.patch_node("cleared", {"metadata": {"labels": dict.fromkeys(cleared)}})
    make(cluster, "after-changes", "p5.48xlarge")
    labelled(cluster, "after-changes")  # seen after both changes, and labelled after any due before it

    assert topology_of(core.read_node("changed")) == {**original, bottom: "nn-00000000000000000"}
    assert topology_of(core.read_node("cleared")) == {}
    for name in ("changed", "cleared"):
        assert decisions(cluster, name) == ["labelled"]
