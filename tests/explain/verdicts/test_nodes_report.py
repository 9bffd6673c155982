"""`explain nodes` judged in-process: labels against EC2's data, per node and per group."""

from decimal import Decimal

from explain.facts.ec2_gpu_data import load_table
from explain.output.reports import nodes_json, nodes_text
from explain.settings import EXIT
from explain.verdicts.nodes_report import (
    GROUP_LABELS_DIFFER,
    LABEL_ABOVE_EC2,
    LABEL_BELOW_EC2,
    LABEL_INVALID,
    LABEL_MISSING,
    LABEL_NOT_EXPECTED,
    NodeInventory,
    inventory,
)
from policy import (
    DEFAULT_SETTINGS,
    EKS_AUTO_GPU_MEMORY_LABEL,
    GFD_GPU_MEMORY_LABEL,
    INSTANCE_TYPE_LABEL,
    INVALID_MEMORY_LABEL,
    KARPENTER_GPU_MEMORY_LABEL,
    NODE_MEMORY_LABEL,
    PolicySettings,
)
from render.ec2_catalogue import snapshot_gpu_memory_table
from tests.explain.objects import DEMO_FLEET, INVENTORY, fleet_json, gpu_node, pod_json, typed_node

TABLE = load_table()


def codes(report: NodeInventory) -> dict[str, list[str]]:
    return {row.facts.name: [problem.code for problem in row.problems] for row in report.nodes}


def test_the_demo_fleet_is_clean_and_grouped() -> None:
    report = inventory(fleet_json(), [], DEFAULT_SETTINGS, TABLE)

    assert report.flagged == 0
    assert report.exit_code == EXIT.fits
    checks = {row.facts.name: row.check for row in report.nodes}
    for node in DEMO_FLEET:
        assert checks[node.name] == ("ok" if node.instance_type.has_gpu else "not a GPU node")
    groups = {group.name: group for group in report.groups}
    assert set(groups) == {node.node_group for node in DEMO_FLEET}
    for node in DEMO_FLEET:
        group = groups[node.node_group]
        assert group.gpus_allocatable == node.instance_type.gpu_count
        assert group.labels == (
            (str(node.instance_type.gpu_memory_mib),) if node.instance_type.has_gpu else ("-",)
        )
    assert "Every GPU node carries a label that agrees with the EC2 data (exit 0)." in nodes_text(report)


def test_allocated_gpus_are_summed_per_node_and_group() -> None:
    h100 = "p5-48xlarge-1"
    pods = [
        pod_json("a", node=h100, gpus=2),
        pod_json("b", node=h100, gpus=3),
        pod_json("cpu", node=h100, gpus=0),
    ]
    report = inventory(fleet_json(), pods, DEFAULT_SETTINGS, TABLE)
    row = next(row for row in report.nodes if row.facts.name == h100)
    assert (row.facts.gpus_allocated, row.facts.gpus_free) == (
        Decimal(5),
        Decimal(INVENTORY["p5.48xlarge"].gpu_count - 5),
    )
    group = next(group for group in report.groups if group.name == row.facts.node_group)
    assert group.gpus_allocated == Decimal(5)


def test_missing_invalid_and_disagreeing_labels_are_flagged() -> None:
    g5 = INVENTORY["g5.xlarge"].gpu_memory_mib
    p5 = INVENTORY["p5.48xlarge"].gpu_memory_mib
    nodes = [
        gpu_node("no-label", "p5.48xlarge", label=None),
        gpu_node("bad-label", "p5.48xlarge", label="80Gi"),
        gpu_node("too-high", "g5.xlarge", label=str(p5)),
        gpu_node("too-low", "p5.48xlarge", label=str(g5)),
        typed_node("cpu-labelled", "m5.xlarge", label="16384"),
    ]
    report = inventory(nodes, [], DEFAULT_SETTINGS, TABLE)

    assert codes(report) == {
        "no-label": [LABEL_MISSING],
        "bad-label": [LABEL_INVALID],
        "too-high": [LABEL_ABOVE_EC2],
        "too-low": [LABEL_BELOW_EC2],
        "cpu-labelled": [],
    }
    checks = {row.facts.name: row.check for row in report.nodes}
    assert checks["cpu-labelled"] == "not checked: no EC2 data for m5.xlarge"
    assert report.exit_code == EXIT.no_fit
    messages = {row.facts.name: row.problems[0].message for row in report.nodes if row.problems}
    assert f"above EC2's {g5} MiB per A10G GPU of g5.xlarge" in messages["too-high"]
    assert "'80Gi'" in messages["bad-label"]
    text = nodes_text(report)
    assert f"node too-high: {messages['too-high']}" in text
    assert f"{report.flagged} flagged (exit 1)." in text


def test_a_mixed_group_may_carry_its_smallest_gpus_label() -> None:
    smallest = min(INVENTORY[name].gpu_memory_mib for name in ("g4dn.xlarge", "g5.xlarge"))
    nodes = [
        gpu_node("t4", "g4dn.xlarge", group="mixed", label=str(smallest)),
        gpu_node("a10g", "g5.xlarge", group="mixed", label=str(smallest)),
    ]
    report = inventory(nodes, [], DEFAULT_SETTINGS, TABLE)
    assert report.flagged == 0
    checks = {row.facts.name: row.check for row in report.nodes}
    assert checks["a10g"] == "ok (smallest GPU of its mixed node group)"
    (group,) = report.groups
    assert (group.name, group.instance_types, group.labels) == (
        "mixed",
        ("g4dn.xlarge", "g5.xlarge"),
        (str(smallest),),
    )


def test_a_group_whose_nodes_disagree_is_flagged() -> None:
    nodes = [
        gpu_node("one", "g5.xlarge", group="g5"),
        gpu_node("two", "g5.xlarge", group="g5", label="16384"),
    ]
    report = inventory(nodes, [], DEFAULT_SETTINGS, TABLE)
    (group,) = report.groups
    assert [problem.code for problem in group.problems] == [GROUP_LABELS_DIFFER]
    assert group.flagged_nodes == 1
    document = nodes_json(report)
    assert document["nodeGroups"][0]["problems"][0]["code"] == GROUP_LABELS_DIFFER
    assert document["flagged"] == 2


def test_nodes_without_a_group_are_not_compared_with_each_other() -> None:
    nodes = [gpu_node("a", "g5.xlarge"), gpu_node("b", "p5.48xlarge")]
    for node in nodes:
        node["metadata"]["labels"].pop("eks.amazonaws.com/nodegroup")
    report = inventory(nodes, [], DEFAULT_SETTINGS, TABLE)
    (group,) = report.groups
    assert group.name == "(none)"
    assert report.flagged == 0


def test_a_label_on_a_fractional_gpu_type_is_not_expected() -> None:
    node = typed_node("shared", "g6f.xlarge", like="g6e.xlarge", label="22888")
    report = inventory([node], [], DEFAULT_SETTINGS, TABLE)
    (row,) = report.nodes
    assert [problem.code for problem in row.problems] == [LABEL_NOT_EXPECTED]
    assert "fractional" in row.problems[0].message
    assert row.gpu == "fractional L4"


def test_a_node_without_an_instance_type_is_not_checked() -> None:
    node = gpu_node("anonymous", "p5.48xlarge")
    del node["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    (row,) = inventory([node], [], DEFAULT_SETTINGS, TABLE).nodes
    assert row.check == "not checked: no instance-type label"
    assert not row.problems


def test_the_gpu_product_label_wins_over_ec2s_name() -> None:
    node = gpu_node("gfd", "p5.48xlarge")
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
    (row,) = inventory([node], [], DEFAULT_SETTINGS, TABLE).nodes
    assert row.gpu == "NVIDIA-H100-80GB-HBM3"


def test_an_empty_cluster_says_so() -> None:
    report = inventory([], [], DEFAULT_SETTINGS, TABLE)
    assert report.exit_code == EXIT.fits
    assert nodes_text(report).endswith("The cluster has no nodes.")


def test_the_memory_is_checked_where_the_policy_reads_it() -> None:
    settings = PolicySettings(instance_type_gpu_memory_mib=snapshot_gpu_memory_table())
    p5 = INVENTORY["p5.48xlarge"].gpu_memory_mib
    typed = gpu_node("typed", "p5.48xlarge", label=None)
    karpenter = gpu_node("karpenter", "g5.xlarge", label=None)
    karpenter["metadata"]["labels"][KARPENTER_GPU_MEMORY_LABEL] = str(p5)
    gfd = gpu_node("gfd", "p5.48xlarge", label=None)
    gfd["metadata"]["labels"][GFD_GPU_MEMORY_LABEL] = "81559"
    odd = gpu_node("odd", "p5.48xlarge", label=None)
    odd["metadata"]["labels"][EKS_AUTO_GPU_MEMORY_LABEL] = "80Gi"
    fractional = typed_node("fractional", "g6f.xlarge", like="g6e.xlarge")
    del fractional["metadata"]["labels"][NODE_MEMORY_LABEL]
    bare = gpu_node("bare", "p5.48xlarge", label=None)
    del bare["metadata"]["labels"][INSTANCE_TYPE_LABEL]
    report = inventory([typed, karpenter, gfd, odd, fractional, bare], [], settings, TABLE)

    assert codes(report) == {
        "typed": [],
        "karpenter": [LABEL_ABOVE_EC2],
        "gfd": [],
        "odd": [LABEL_INVALID],
        "fractional": [LABEL_MISSING],
        "bare": [LABEL_MISSING],
    }
    rows = {row.facts.name: row for row in report.nodes}
    assert (rows["typed"].check, rows["typed"].facts.memory_source) == ("ok", INSTANCE_TYPE_LABEL)
    assert rows["gfd"].check == "ok (GPU feature discovery's figure, from NVML)"
    messages = {name: row.problems[0].message for name, row in rows.items() if row.problems}
    assert messages["karpenter"].startswith(f"label {KARPENTER_GPU_MEMORY_LABEL}={p5} MiB is above EC2's")
    assert messages["odd"] == f"{INVALID_MEMORY_LABEL.format(label=EKS_AUTO_GPU_MEMORY_LABEL)}: '80Gi'"
    assert messages["fractional"].endswith("and instance type g6f.xlarge is not in the GPU table")
    assert messages["bare"].startswith("GPU node without a GPU-memory label of any scheme")
    text = nodes_text(report)
    assert f"{p5} (instance-type)" in text
    assert "81559 (gfd)" in text
    assert "'80Gi' (invalid)" in text
    document = {node["name"]: node for node in nodes_json(report)["nodes"]}
    assert (document["gfd"]["memorySource"], document["gfd"]["memoryMiB"]) == (GFD_GPU_MEMORY_LABEL, 81559)
    assert (document["bare"]["memorySource"], document["bare"]["memoryMiB"]) == (None, None)
