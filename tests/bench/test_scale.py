"""The scale run's pure parts: its fleet and fit check, its percentiles, its results file and report."""

import dataclasses
from pathlib import Path

import pytest

from bench.fleet.cluster_load import GpuPod, gpu_pod_manifest, node_labels, realistic_nodes
from bench.fleet.scale_fleet import (
    SCALE_INSTANCE_TYPES,
    WorkloadDoesNotFit,
    capacity,
    fleet_types,
    require_fit,
    scale_pods,
)
from bench.measurements.e2e_throughput import admitted_with_affinity
from bench.report.scale_report import SCALE_HEADING, render_scale_section, splice_scale_section
from bench.report.scale_results import ScaleDocument, ScaleRow, SizeInfo, VerbLatency, load, percentile, save
from bench.scale import QUICK_SCALE, ScalePlan, build_parser, check_plan, plan_from, round_settings
from policy import NODE_MEMORY_LABEL, node_affinity_patch
from render.ec2_catalogue import load_snapshot


def test_fleet_types_carry_the_ec2_snapshot_figures() -> None:
    entries = load_snapshot().by_name()
    types = {kind.name: kind for kind in fleet_types()}
    assert tuple(types) == SCALE_INSTANCE_TYPES
    for name, kind in types.items():
        gpus = entries[name]["GpuInfo"]["Gpus"]
        assert kind.gpus == sum(gpu["Count"] for gpu in gpus)
        assert kind.label_mib == min(gpu["MemoryInfo"]["SizeInMiB"] for gpu in gpus)
        assert kind.cpu == str(entries[name]["VCpuInfo"]["DefaultVCpus"])
    assert types["p5e.48xlarge"].label_mib == 144384
    assert types["g4dn.xlarge"].label_mib == 16384


def test_fleet_types_refuse_unknown_and_gpu_less_types() -> None:
    with pytest.raises(KeyError, match="not in the EC2 snapshot"):
        fleet_types(("x9.huge",))
    with pytest.raises(ValueError, match="has no GPU"):
        fleet_types(("m5.xlarge",))


def test_nodes_made_from_the_fleet_carry_its_labels_and_gpus() -> None:
    types = fleet_types()
    nodes = realistic_nodes(len(types) * 2, types)
    labels = node_labels(nodes)
    assert len(labels) == len(nodes)  # distinct names
    for index, node in enumerate(nodes):
        kind = types[index % len(types)]
        assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == kind.name
        assert labels[node["metadata"]["name"]] == kind.label_mib
        assert node["metadata"]["labels"][NODE_MEMORY_LABEL] == str(kind.label_mib)
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == str(kind.gpus)


def test_capacity_counts_gpus_by_label() -> None:
    types = fleet_types()
    fleet = capacity(types, len(types) + 1)  # one of each, and a second of the first type
    first = types[0]
    assert fleet.gpus_by_label[first.label_mib] >= 2 * first.gpus
    assert sum(fleet.gpus_by_label.values()) == sum(kind.gpus for kind in types) + first.gpus
    assert fleet.gpus_with_at_least(81920) == sum(kind.gpus for kind in types if kind.label_mib >= 81920)


def test_require_fit_allows_exactly_the_gpus_of_the_largest_minimum() -> None:
    fleet = capacity(fleet_types(), 8)
    room = fleet.gpus_with_at_least(81920)
    pods = [GpuPod(f"p{index}", 81920 if index == 0 else None) for index in range(room)]
    require_fit(fleet, pods)
    with pytest.raises(WorkloadDoesNotFit, match=f"only {room} GPUs have >= 81920 MiB"):
        require_fit(fleet, [*pods, GpuPod("one-more", None)])


def test_scale_pods_interleave_minimums_with_unique_names() -> None:
    pods = scale_pods(12, (None, 100, 200))
    assert [pod.min_memory_mib for pod in pods[:6]] == [None, 100, 200, None, 100, 200]
    assert len({pod.name for pod in pods}) == 12


def test_the_default_and_quick_plans_fit_their_sizes() -> None:
    check_plan(ScalePlan())
    check_plan(QUICK_SCALE)
    with pytest.raises(WorkloadDoesNotFit):
        check_plan(ScalePlan(sizes=(8,), pods=100))


def test_flags_override_the_plan_and_bad_values_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_from(
        build_parser().parse_args(["--sizes", "2000,1000", "--qps", "default,500", "--pods", "50"])
    )
    assert plan.sizes == (1000, 2000)
    assert plan.qps == (None, 500)
    assert plan.pods == 50
    assert plan.extender_pods == ScalePlan().extender_pods
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--qps", "fast"])
    assert "QPS settings are 'default' or positive integers" in capsys.readouterr().err


def test_percentile_interpolates_between_ranks() -> None:
    values = [float(value) for value in range(1, 101)]
    assert percentile(values, 0.5) == pytest.approx(50.5)
    assert percentile(values, 0.99) == pytest.approx(99.01)
    assert percentile([7.0], 0.99) == 7.0


def _row(mode: str, rate: float, *, complete: bool = True, below: int = 0, round_index: int = 0) -> ScaleRow:
    return ScaleRow(
        round=round_index,
        nodes=1000,
        mode=mode,
        qps=None,
        pods=10,
        bound=10 if complete else 7,
        complete=complete,
        below_minimum=below,
        pods_per_second=rate,
        seconds_start_to_last=1.0,
        cpu_ms_per_pod={"scheduler": 2.0},
        startup_cpu_seconds={"scheduler": 1.5},
        rss_mib={"kube-apiserver": 900.0},
        peak_rss_mib={"kube-apiserver": 950.0},
        filter=VerbLatency(calls=10, p50_ms=1.0, p99_ms=3.0) if mode != "vanilla" else None,
        failure="" if complete else "only 7 of 10 pods bound",
    )


def _document(*rows: ScaleRow) -> ScaleDocument:
    return ScaleDocument(
        command="python -m bench.scale",
        machine={"date": "today", "cpus": 2, "cpu_model": "cpu", "memory_gib": 8.0},
        elapsed_seconds=60.0,
        instance_types=["g5.2xlarge"],
        minimums_mib=[None, 16384],
        sizes=[SizeInfo(1000, 20000.0, 30.0, (1.0, 2.0, 3.0))],
        rows=list(rows),
    )


def test_results_file_round_trips(tmp_path: Path) -> None:
    document = _document(_row("vanilla", 50.0), _row("extender-cached", 25.0))
    save(document, tmp_path / "scale-results.json")
    assert load(tmp_path / "scale-results.json") == document


def test_report_gives_ratios_and_names_failures() -> None:
    passing = render_scale_section(_document(_row("vanilla", 50.0), _row("plugin", 25.0)))
    plugin_line = next(line for line in passing if "| plugin |" in line)
    assert "| 0.50x |" in plugin_line
    assert any("Every pod bound in every run" in line for line in passing)
    failing = render_scale_section(
        _document(_row("vanilla", 50.0), _row("extender", 5.0, complete=False, below=1))
    )
    text = "\n".join(failing)
    assert "| 1 (1 **FAILED**) |" in text
    assert "round 1: 7/10 bound" in text
    assert "only 7 of 10 pods bound" in text
    assert "Every pod bound" not in text


def test_splice_puts_the_section_before_the_findings_and_replaces_it_later() -> None:
    original = "# Benchmark results\n\n## Headline\n\nrows\n\n## Findings: old\n\nold text\n"
    first = splice_scale_section(
        original, [SCALE_HEADING, "", "table 1", ""], "## Findings: new\n\nnew text\n"
    )
    assert first.index("## Headline") < first.index(SCALE_HEADING) < first.index("## Findings: new")
    assert "old text" not in first
    second = splice_scale_section(first, [SCALE_HEADING, "", "table 2", ""], "## Findings: new\n\nnew text\n")
    assert "table 1" not in second
    assert second.count(SCALE_HEADING) == 1
    assert "rows" in second
    assert "table 2" in second


def test_cells_give_the_median_the_spread_and_ratios_to_both_baselines() -> None:
    document = _document(
        *(_row("vanilla", rate, round_index=index) for index, rate in enumerate((50.0, 40.0, 60.0))),
        *(_row("vanilla-affinity", rate, round_index=index) for index, rate in enumerate((25.0, 20.0, 30.0))),
        *(_row("plugin", rate, round_index=index) for index, rate in enumerate((25.0, 30.0, 24.0))),
        _row("plugin", 1.0, complete=False, round_index=3),
    )
    plugin = document.cell(1000, "plugin", None)
    assert (plugin.runs, plugin.complete_runs) == (4, 3)
    assert (plugin.pods_per_second.median, plugin.pods_per_second.low, plugin.pods_per_second.high) == (
        25.0,
        24.0,
        30.0,
    )
    assert plugin.ratio == {"vanilla": 0.5, "vanilla-affinity": 1.0}
    paired = plugin.ratio_per_round["vanilla"]  # 25/50, 30/40, 24/60
    assert (paired.median, paired.low, paired.high) == (0.5, 0.4, 0.75)
    assert plugin.cpu_ms_per_pod["scheduler"].median == 2.0
    table = render_scale_section(document)
    plugin_line = next(line for line in table if "| plugin |" in line)
    assert "| 25.0 (24.0-30.0) | 0.50x (0.40-0.75) | 1.00x (0.80-1.50) |" in plugin_line
    vanilla_line = next(line for line in table if "| vanilla |" in line)
    assert "| 50.0 (40.0-60.0) | - | 2.00x (2.00-2.00) |" in vanilla_line


def test_rounds_rotate_the_modes_and_run_extender_mode_in_its_rounds_at_the_first_qps() -> None:
    plan = ScalePlan(qps=(None, 1000), rounds=3, extender_rounds=1)
    first, second = round_settings(plan, 0), round_settings(plan, 1)
    assert [setting.mode for setting in first if setting.qps is None] == list(plan.modes)
    assert [setting.mode for setting in first if setting.qps == 1000] == [
        mode for mode in plan.modes if mode != "extender"
    ]
    assert [setting.mode for setting in second if setting.qps is None] == [
        *(mode for mode in plan.modes[1:] if mode != "extender"),
        plan.modes[0],
    ]
    assert {setting.mode for setting in second} == set(plan.modes) - {"extender"}
    arguments = build_parser().parse_args(["--rounds", "2", "--extender-rounds", "2"])
    assert (plan_from(arguments).rounds, plan_from(arguments).extender_rounds) == (2, 2)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--rounds", "0"])


def test_vanilla_affinity_pods_carry_the_webhooks_node_affinity() -> None:
    plain = gpu_pod_manifest(GpuPod("bench-0001", 22888))
    patched = gpu_pod_manifest(GpuPod("bench-0001", 22888), with_affinity=True)
    assert "affinity" not in plain["spec"]
    (operation,) = node_affinity_patch(plain)
    assert patched["spec"]["affinity"] == operation["value"]
    terms = patched["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    first = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert first == [{"key": NODE_MEMORY_LABEL, "operator": "Gt", "values": ["22887"]}]
    assert gpu_pod_manifest(GpuPod("bench-0002", None), with_affinity=True) == gpu_pod_manifest(
        GpuPod("bench-0002", None)
    )


def test_report_says_whether_our_modes_pods_carried_the_webhooks_affinity(tmp_path: Path) -> None:
    as_written = _document(_row("vanilla", 50.0), _row("plugin", 45.0))
    admitted = dataclasses.replace(as_written, webhook_affinity=True)
    save(admitted, tmp_path / "scale-results.json")
    assert load(tmp_path / "scale-results.json").webhook_affinity
    assert "carry the same affinity" in "\n".join(render_scale_section(admitted))
    assert "created as written, without it" in "\n".join(render_scale_section(as_written))
    assert admitted_with_affinity("plugin")
    assert admitted_with_affinity("vanilla-affinity")
    assert not admitted_with_affinity("vanilla")
