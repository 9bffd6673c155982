"""`explain pod` judged in-process: verdicts, per-node rows and what would have to change."""

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest

from explain.facts.ec2_gpu_data import load_table
from explain.output.reports import pod_json as render_pod_json
from explain.output.reports import pod_text
from explain.settings import EXIT
from explain.verdicts.pod_report import PodExplanation, explain_pod
from policy import (
    BELOW_MINIMUM,
    CAPACITY_TYPE_ANNOTATION,
    CAPACITY_TYPE_LABEL,
    DEFAULT_CAPACITY_SETTINGS,
    DEFAULT_SETTINGS,
    GFD_GPU_MEMORY_LABEL,
    INSTANCE_TYPE_LABEL,
    INVALID_CAPACITY_CHOICE,
    INVALID_MEMORY_LABEL,
    INVALID_MIN_MEMORY,
    INVALID_NODE_LABEL,
    KARPENTER_GPU_MEMORY_LABEL,
    NODE_BEING_REMOVED,
    NOT_ON_DEMAND,
    REQUIRES_GPU_REQUEST,
    SCORE_SCALE_MIB,
    UNKNOWN_INSTANCE_TYPE,
    CapacityTypeSettings,
    PolicySettings,
)
from tests.explain.objects import DEMO_FLEET, INVENTORY, fleet_json, gpu_node, pod_json

TABLE = load_table()
SCHEDULER = "custom-scheduler"


def explain(
    pod: dict[str, Any],
    nodes: Sequence[dict[str, Any]] | None = None,
    bound: Sequence[dict[str, Any]] = (),
    settings: PolicySettings = DEFAULT_SETTINGS,
    capacity: CapacityTypeSettings = DEFAULT_CAPACITY_SETTINGS,
) -> PodExplanation:
    return explain_pod(
        pod,
        fleet_json() if nodes is None else nodes,
        bound,
        settings=settings,
        ec2=TABLE,
        scheduler_name=SCHEDULER,
        capacity=capacity,
    )


def labels() -> dict[str, int]:
    """The demo fleet's labels by node name (0 for the CPU node)."""
    return {node.name: node.instance_type.gpu_memory_mib for node in DEMO_FLEET}


def test_a_minimum_above_every_label_fits_nowhere_and_names_the_largest() -> None:
    minimum = 200 * 1024
    explanation = explain(pod_json("big", str(minimum)))

    assert explanation.verdict == "no-fit"
    assert explanation.exit_code == EXIT.no_fit
    assert explanation.fitting_nodes == ()
    largest_node, largest = max(labels().items(), key=lambda item: item[1])
    instance_type = next(node.instance_type.name for node in DEMO_FLEET if node.name == largest_node)
    assert explanation.changes[0] == (
        f"no node has >= {minimum} MiB per GPU; the largest is {largest} MiB on {instance_type} "
        f"(node {largest_node})"
    )
    reasons = {row.node.name: row.reason for row in explanation.nodes}
    for node in DEMO_FLEET:
        cpu = UNKNOWN_INSTANCE_TYPE.format(instance_type=node.instance_type.name)
        assert reasons[node.name] == (BELOW_MINIMUM if node.instance_type.has_gpu else cpu)
    suggested = [gpus for gpus in TABLE.types.values() if gpus.instance_type in explanation.changes[1]]
    assert suggested, "a type of the EC2 table with enough memory is named"
    assert all(gpus.label_mib >= minimum for gpus in suggested)


def test_a_minimum_no_ec2_type_meets_says_so() -> None:
    explanation = explain(pod_json("huge", "1048576"))
    assert explanation.verdict == "no-fit"
    assert "no instance type in the EC2 data has that much" in explanation.changes[1]


def test_nodes_without_a_valid_label_are_named() -> None:
    nodes = [*fleet_json(), gpu_node("unlabelled-h100", "p5.48xlarge", label=None)]
    explanation = explain(pod_json("big", str(200 * 1024)), nodes)
    assert any(
        "unlabelled-h100" in change and "missing or invalid" in change for change in explanation.changes
    )
    assert not any("m5-xlarge-1" in change for change in explanation.changes[2:]), (
        "a CPU node is not a GPU node"
    )


def test_with_no_valid_label_anywhere_the_label_is_named() -> None:
    settings = PolicySettings(node_memory_label="example.com/other-label")
    explanation = explain(pod_json("any", "8192"), settings=settings)
    assert explanation.verdict == "no-fit"
    assert {row.reason for row in explanation.nodes} == {
        UNKNOWN_INSTANCE_TYPE.format(instance_type=node.instance_type.name) for node in DEMO_FLEET
    }, "the default table is empty: every node is judged by its instance type, and refused"
    assert explanation.changes[0].startswith(
        "no node's GPU memory can be read (a valid example.com/other-label"
    )
    unlabelled = [gpu_node("bare", "p5.48xlarge", label=None)]
    del unlabelled[0]["metadata"]["labels"][INSTANCE_TYPE_LABEL]
    bare = explain(pod_json("any", "8192"), unlabelled)
    assert [row.reason for row in bare.nodes] == [INVALID_NODE_LABEL], "none of the labels"


def test_nodes_read_from_other_schemes_fit_and_show_where_the_memory_came_from() -> None:
    settings = PolicySettings(instance_type_gpu_memory_mib={"p5.48xlarge": 81920})
    karpenter = gpu_node("karpenter-h100", "p5.48xlarge", label=None)
    karpenter["metadata"]["labels"][KARPENTER_GPU_MEMORY_LABEL] = "81920"
    typed = gpu_node("typed-h100", "p5.48xlarge", label=None)
    odd = gpu_node("odd-h100", "p5.48xlarge", label=None)
    odd["metadata"]["labels"][GFD_GPU_MEMORY_LABEL] = "80Gi"
    explanation = explain(pod_json("big", "40960"), [karpenter, typed, odd], settings=settings)
    rows = {row.node.name: row for row in explanation.nodes}
    assert (rows["karpenter-h100"].fits, rows["typed-h100"].fits, rows["odd-h100"].fits) == (
        True,
        True,
        False,
    )
    assert rows["odd-h100"].reason == INVALID_MEMORY_LABEL.format(label=GFD_GPU_MEMORY_LABEL)
    assert rows["typed-h100"].node.memory_source == INSTANCE_TYPE_LABEL
    text = pod_text(explanation, settings)
    assert "81920 (karpenter)" in text
    assert "81920 (instance-type)" in text
    assert "'80Gi' (invalid)" in text
    nodes = {node["name"]: node for node in render_pod_json(explanation)["nodes"]}
    assert nodes["karpenter-h100"]["memorySource"] == KARPENTER_GPU_MEMORY_LABEL
    assert (nodes["typed-h100"]["memoryMiB"], nodes["odd-h100"]["memoryMiB"]) == (81920, None)
    assert nodes["typed-h100"]["labelMiB"] is None, "our label's value: the node has none"


def test_an_empty_cluster_fits_nothing() -> None:
    explanation = explain(pod_json("alone", "8192"), nodes=[])
    assert explanation.verdict == "no-fit"
    assert explanation.changes == ("the cluster has no nodes",)


def test_a_fitting_pod_lists_its_nodes_with_the_plugins_and_the_extenders_scores() -> None:
    minimum = 40 * 1024
    explanation = explain(pod_json("fits", str(minimum)))

    assert explanation.verdict == "fits"
    assert explanation.exit_code == EXIT.fits
    assert set(explanation.fitting_nodes) == {name for name, label in labels().items() if label >= minimum}
    for row in explanation.nodes:
        label = row.node.label_mib or 0
        assert 0 <= row.score <= 100
        assert row.extender_score == row.score // 10
        if label >= SCORE_SCALE_MIB:
            assert row.score == 100
        elif label:
            assert row.score < 100
    scores = [row.score for row in explanation.nodes if row.has_room]
    assert scores == sorted(scores, reverse=True), "nodes with room come first, best score first"
    assert explanation.changes[0].startswith(f"none in the GPU policy: {len(scores)} node(s) fit")


def test_a_larger_scale_lowers_every_score() -> None:
    """Scores come from the policy with the given settings, not a fixed scale."""
    default = {row.node.name: row.score for row in explain(pod_json("p", "8192")).nodes}
    doubled = PolicySettings(score_scale_mib=2 * SCORE_SCALE_MIB)
    wider = {row.node.name: row.score for row in explain(pod_json("p", "8192"), settings=doubled).nodes}
    assert any(wider[name] < default[name] for name in default)
    assert all(wider[name] <= default[name] for name in default)


@pytest.mark.parametrize(
    ("annotation", "suggestion"),
    [("80GiB", "81920"), ("16 Gi", "16384"), ("40G", "38147"), ("1.5", None), ("0", None), ("abc", None)],
)
def test_an_invalid_annotation_is_the_pods_fault_and_the_fix_says_how(
    annotation: str, suggestion: str | None
) -> None:
    explanation = explain(pod_json("bad", annotation))

    assert explanation.verdict == "invalid"
    assert explanation.exit_code == EXIT.invalid_pod
    assert explanation.error == INVALID_MIN_MEMORY
    assert all(not row.fits and row.reason == INVALID_MIN_MEMORY for row in explanation.nodes)
    (change,) = explanation.changes
    assert change.startswith("set the annotation training.example.com/min-gpu-memory-mib to a whole number")
    assert repr(annotation) in change
    if suggestion is None:
        assert "byte quantity" not in change
    else:
        assert change.endswith(f'"{suggestion}"')


def test_an_annotation_without_a_gpu_request_asks_for_gpus() -> None:
    explanation = explain(pod_json("cpu", "8192", gpus=0))
    assert explanation.verdict == "invalid"
    assert explanation.error == REQUIRES_GPU_REQUEST
    assert "request GPUs (nvidia.com/gpu" in explanation.changes[0]


def test_a_malformed_request_is_named() -> None:
    pod = pod_json("broken", "8192")
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "one"
    explanation = explain(pod)
    assert explanation.verdict == "invalid"
    assert explanation.gpu_request is None
    assert "nvidia.com/gpu" in explanation.error
    assert explanation.changes[0].startswith("fix the pod: ")


def test_more_gpus_than_any_fitting_node_has_is_no_room_naming_the_most() -> None:
    most = max(node.instance_type.gpu_count for node in DEMO_FLEET)
    explanation = explain(pod_json("wide", "8192", gpus=most + 1))

    assert explanation.verdict == "no-room"
    assert explanation.exit_code == EXIT.no_room
    assert explanation.fitting_nodes
    assert not any(row.gpu_count_fits for row in explanation.nodes if row.fits)
    (change,) = explanation.changes
    assert change.startswith(
        f"no node with enough GPU memory has {most + 1} nvidia.com/gpu at all (the most is {most} on "
    )
    assert f"ask for at most {most} per pod" in change


def test_busy_nodes_are_no_room_with_their_free_counts() -> None:
    h200 = INVENTORY["p5e.48xlarge"]
    holders = [
        pod_json(f"holder-{index}", node="p5e-48xlarge-1", gpus=h200.gpu_count - 1) for index in range(1)
    ]
    explanation = explain(pod_json("pair", str(h200.gpu_memory_mib), gpus=2), bound=holders)

    assert explanation.verdict == "no-room"
    assert explanation.fitting_nodes == ("p5e-48xlarge-1",)
    (change,) = explanation.changes
    assert change.startswith(
        "nodes with enough GPU memory exist but have too few free GPUs for the pod's 2 nvidia.com/gpu"
    )
    assert f"p5e-48xlarge-1 (1 of {h200.gpu_count} free)" in change


def test_bound_pods_use_up_gpus_but_the_explained_pod_is_not_counted() -> None:
    h100 = "p5-48xlarge-1"
    gpus = INVENTORY["p5.48xlarge"].gpu_count
    holders = [pod_json(f"holder-{index}", node=h100) for index in range(gpus)]
    newcomer = explain(pod_json("newcomer", str(80 * 1024)), bound=holders)
    row = next(row for row in newcomer.nodes if row.node.name == h100)
    assert (row.node.gpus_allocated, row.node.gpus_free, row.gpu_count_fits) == (
        Decimal(gpus),
        Decimal(0),
        False,
    )
    assert row.fits, "the policy still fits; the GPU count is another filter's"

    holder = explain(holders[0], bound=holders)
    assert holder.verdict == "bound"
    row = next(row for row in holder.nodes if row.node.name == h100)
    assert (row.node.gpus_allocated, row.gpu_count_fits) == (Decimal(gpus - 1), True)
    assert holder.changes == (f"none: bound to node {h100}",)


def test_untolerated_taints_are_no_room_with_the_taint_named() -> None:
    explanation = explain(pod_json("intolerant", "8192", tolerations=False))
    assert explanation.verdict == "no-room"
    gpu_rows = [row for row in explanation.nodes if row.node.label_mib]
    assert all(not row.tolerated for row in gpu_rows)
    assert "nvidia.com/gpu=true:NoSchedule" in explanation.changes[0]
    assert "add tolerations" in explanation.changes[0]


def test_a_cpu_pod_fits_the_cpu_node_only_by_taints() -> None:
    explanation = explain(pod_json("cpu", gpus=0, tolerations=False))
    assert explanation.verdict == "fits"
    assert all(row.fits for row in explanation.nodes), "the policy does not restrict a pod without a minimum"
    assert [row.node.name for row in explanation.nodes if row.has_room] == ["m5-xlarge-1"]


def test_a_pod_bound_where_the_policy_now_refuses_says_so() -> None:
    nodes = [gpu_node("t4", "g4dn.xlarge")]
    explanation = explain(pod_json("moved", str(40 * 1024), node="t4"), nodes)
    assert explanation.verdict == "bound"
    assert explanation.exit_code == EXIT.fits
    assert explanation.changes[0].startswith(
        f"bound to node t4, which the policy refuses now ({BELOW_MINIMUM})"
    )

    gone = explain(pod_json("orphan", "8192", node="deleted-node"), nodes)
    assert gone.changes == ("none: bound to node deleted-node, which no longer exists",)


def test_a_pod_for_another_scheduler_is_flagged() -> None:
    explanation = explain(pod_json("elsewhere", "8192", scheduler_name="default-scheduler"))
    assert not explanation.governed
    assert "'default-scheduler', not 'custom-scheduler'" in explanation.changes[0]


def test_the_pods_scheduling_condition_is_reported() -> None:
    pod = pod_json("waiting", str(200 * 1024))
    pod["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/7 nodes are available",
        }
    ]
    explanation = explain(pod)
    assert (explanation.state.scheduled_reason, explanation.state.scheduled_message) == (
        "Unschedulable",
        "0/7 nodes are available",
    )
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert "PodScheduled=False Unschedulable: 0/7 nodes are available" in text
    assert render_pod_json(explanation)["pod"]["podScheduled"] == {
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/7 nodes are available",
    }


def test_the_table_has_a_row_per_node_and_the_label_column() -> None:
    explanation = explain(pod_json("big", str(200 * 1024)))
    text = pod_text(explanation, DEFAULT_SETTINGS)
    lines = text.splitlines()
    header = next(index for index, line in enumerate(lines) if line.startswith("NODE "))
    rows = lines[header + 2 : header + 2 + len(DEMO_FLEET)]
    assert sorted(row.split()[0] for row in rows) == sorted(node.name for node in DEMO_FLEET)
    h200 = next(row for row in rows if row.startswith("p5e-48xlarge-1"))
    assert "8x H200" in h200
    assert str(INVENTORY["p5e.48xlarge"].gpu_memory_mib) in h200
    assert "verdict    no-fit: no node passes the GPU-memory policy (exit 1)" in text


def test_the_capacity_type_verdict_is_given_per_node() -> None:
    on_demand = gpu_node("on-demand", "g5.xlarge")
    spot = gpu_node("spot", "g5.xlarge")
    del spot["metadata"]["labels"][CAPACITY_TYPE_LABEL]  # EKS's key alone: read through its mapping
    spot["metadata"]["labels"]["eks.amazonaws.com/capacityType"] = "SPOT"
    draining = gpu_node("draining", "g5.xlarge")
    draining["spec"]["taints"] = [
        *draining["spec"].get("taints", []),
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
    ]
    cordoned = gpu_node("cordoned", "g5.xlarge")
    cordoned["spec"]["unschedulable"] = True
    deleting = gpu_node("deleting", "g5.xlarge")
    deleting["metadata"]["deletionTimestamp"] = "2026-12-05T10:20:00Z"
    pod = pod_json("train", "16384")
    pod["metadata"]["annotations"][CAPACITY_TYPE_ANNOTATION] = "on-demand"
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]

    explanation = explain(pod, [on_demand, spot, draining, cordoned, deleting])
    rows = {row.node.name: row for row in explanation.nodes}
    assert explanation.capacity_choice == "on-demand"
    assert (rows["on-demand"].fits, rows["on-demand"].capacity_type, rows["on-demand"].capacity_score) == (
        True,
        "on-demand",
        100,
    )
    assert (rows["spot"].fits, rows["spot"].reason, rows["spot"].capacity_score) == (False, NOT_ON_DEMAND, 0)
    for taken_away in ("draining", "cordoned", "deleting"):
        assert (rows[taken_away].fits, rows[taken_away].reason) == (False, NODE_BEING_REMOVED)
    assert explanation.fitting_nodes == ("on-demand",)
    text = pod_text(explanation, DEFAULT_SETTINGS)
    assert f"capacity type on-demand ({CAPACITY_TYPE_ANNOTATION})" in text
    assert NOT_ON_DEMAND in text
    assert "spot (0)" in text
    document = render_pod_json(explanation)
    assert document["capacityType"] == "on-demand"
    assert {node["name"]: node["capacityScore"] for node in document["nodes"]} == {
        "on-demand": 100,
        "spot": 0,
        "draining": 100,
        "cordoned": 100,
        "deleting": 100,
    }


def test_the_stack_default_choice_judges_a_pod_without_the_annotation() -> None:
    on_demand = gpu_node("on-demand", "g5.xlarge")
    spot = gpu_node("spot", "g5.xlarge")
    spot["metadata"]["labels"][CAPACITY_TYPE_LABEL] = "spot"
    pod = pod_json("train", "16384")
    assert explain(pod, [on_demand, spot]).fitting_nodes == ("on-demand", "spot"), "no default: both"

    explanation = explain(pod, [on_demand, spot], capacity=CapacityTypeSettings(default_choice="on-demand"))
    assert explanation.capacity_choice == "on-demand"
    assert explanation.fitting_nodes == ("on-demand",)
    assert "capacity type on-demand (the stack's defaultCapacityType)" in pod_text(
        explanation, DEFAULT_SETTINGS
    )
    pod["metadata"]["annotations"][CAPACITY_TYPE_ANNOTATION] = "spot"
    chosen = explain(pod, [on_demand, spot], capacity=CapacityTypeSettings(default_choice="on-demand"))
    assert chosen.fitting_nodes == ("spot",), "the pod's own choice wins"
    assert f"capacity type spot ({CAPACITY_TYPE_ANNOTATION})" in pod_text(chosen, DEFAULT_SETTINGS)


def test_an_invalid_capacity_type_is_an_invalid_pod_with_its_fix() -> None:
    pod = pod_json("train", "16384")
    pod["metadata"]["annotations"][CAPACITY_TYPE_ANNOTATION] = "Spot"
    explanation = explain(pod)
    assert explanation.verdict == "invalid"
    assert explanation.error == INVALID_CAPACITY_CHOICE
    assert explanation.changes[-1].startswith(f"set the annotation {CAPACITY_TYPE_ANNOTATION} to on-demand")
