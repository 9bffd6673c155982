"""The picture's path from EMF events to a PNG, on moto's CloudWatch: the events become data as
CloudWatch extracts them, each widget's lines are read back with GetMetricData as the dashboard
draws them (exact dimension set, ``select`` kept, ``exclude`` left out, one line per split value,
series combined with the spec's function), and the widgets are drawn into one PNG."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcluster.demo.dashboard_picture import render
from localcluster.services.cloudwatch_widgets import Widget, Window, read_widgets
from localcluster.services.emf_metrics import EmfError, datums, put_all
from render.cloudwatch_dashboard import widget_specs
from render.metric_specs import CLUSTER_DIMENSION, GPU_SCHEDULER_NAMESPACE

CLUSTER = "lab"
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
PERIOD = 10
JOBZONE = "JobZone: zone plans, jobs held, holds ended"
ERRORS = "Extender and webhook errors"
LATENCY = "Extender and webhook latency"


def emf(seconds: int, name: str, value: object, cluster: str = CLUSTER, **labels: str) -> str:
    """One EMF event as the awsemf exporter writes it: one metric, its labels as dimensions."""
    moment = START + timedelta(seconds=seconds)
    dimensions = [CLUSTER_DIMENSION, *labels]
    return json.dumps(
        {
            "_aws": {
                "Timestamp": int(moment.timestamp() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": GPU_SCHEDULER_NAMESPACE,
                        "Dimensions": [dimensions],
                        "Metrics": [{"Name": name}],
                    }
                ],
            },
            CLUSTER_DIMENSION: cluster,
            **labels,
            name: value,
        }
    )


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-west-2")


def read(cloudwatch: Any) -> dict[str, Widget]:
    window = Window(START, START + timedelta(minutes=2), PERIOD)
    return {widget.title: widget for widget in read_widgets(cloudwatch, CLUSTER, window, node_groups={})}


def points(widget: Widget) -> dict[str, list[float]]:
    return {line.label: [value for _, value in line.points] for line in widget.lines}


def test_counters_become_one_line_per_result_and_the_alarms_selection(cloudwatch: Any) -> None:
    held = "scheduler_jobzone_holds_ended_total"
    events = [
        emf(1, held, 0.0, result="timed_out"),
        emf(1, held, 2.0, result="released"),
        emf(11, held, 1.0, result="released"),
        emf(11, held, 1.0, result="timed_out"),
        emf(12, held, 5.0, cluster="other", result="timed_out"),  # another cluster's: not drawn
        emf(13, "scheduler_jobzone_jobs_held_total", 3.0),
    ]
    assert put_all(cloudwatch, events) == len(events)
    lines = points(read(cloudwatch)[JOBZONE])
    assert lines["released holds ended"] == [2.0, 1.0]
    assert lines["timed_out holds ended"] == [0.0, 1.0]
    assert lines["jobs timed out"] == [0.0, 1.0]
    assert lines["jobs held"] == [3.0]
    assert not [label for label in lines if "rejected" in label or "zone plans" in label]


def test_errors_leave_out_status_200_and_add_up_the_verbs_they_select(cloudwatch: Any) -> None:
    requests = "gpu_extender_requests_total"
    put_all(
        cloudwatch,
        [
            emf(1, requests, 40.0, verb="filter", status="200"),
            emf(1, requests, 2.0, verb="filter", status="503"),
            emf(1, requests, 3.0, verb="prioritize", status="400"),
            emf(1, requests, 4.0, verb="preempt", status="413"),
            emf(1, requests, 7.0, verb="mutate", status="413"),
            emf(1, requests, 9.0, verb="other", status="404"),
        ],
    )
    assert points(read(cloudwatch)[ERRORS]) == {"extender errors": [9.0], "webhook errors": [7.0]}


def test_a_histogram_statistic_set_is_drawn_as_its_average(cloudwatch: Any) -> None:
    latency = "gpu_extender_request_duration_seconds"
    put_all(
        cloudwatch,
        [
            emf(1, latency, {"Count": 4, "Sum": 0.02, "Min": 0.001, "Max": 0.01}, verb="filter"),
            emf(2, latency, {"Count": 0, "Sum": 0, "Min": 0, "Max": 0}, verb="mutate"),  # nothing observed
        ],
    )
    assert points(read(cloudwatch)[LATENCY]) == {"filter latency": [pytest.approx(0.005)]}


def test_a_metric_under_another_dimension_set_is_not_the_specs(cloudwatch: Any) -> None:
    # The dashboard reads a metric in exactly its spec's dimension set (SCHEMA): the same name
    # with one more dimension is another metric.
    put_all(cloudwatch, [emf(1, "scheduler_jobzone_jobs_held_total", 1.0, profile="default")])
    assert read(cloudwatch)[JOBZONE].lines == []


def test_events_that_declare_no_metric_are_skipped_and_a_broken_one_is_refused() -> None:
    assert list(datums(["plain text", json.dumps({"level": "info"})])) == []
    broken = json.loads(emf(1, "scheduler_jobzone_jobs_held_total", 1.0))
    del broken[CLUSTER_DIMENSION]
    with pytest.raises(EmfError, match="dimensions without a value \\['ClusterName'\\]"):
        list(datums([json.dumps(broken)]))
    with pytest.raises(EmfError, match="neither a number"):
        list(datums([emf(1, "scheduler_jobzone_jobs_held_total", "many")]))


def test_the_agents_version_0_layout_gives_the_same_data() -> None:
    """The agent writes Prometheus EMF as version 0: the directives at the top of the event and
    the timestamp a string of milliseconds."""
    event = json.loads(emf(1, "scheduler_jobzone_jobs_held_total", 3.0))
    meta = event.pop("_aws")
    version_0 = json.dumps(
        {
            **event,
            "Version": "0",
            "CloudWatchMetrics": meta["CloudWatchMetrics"],
            "Timestamp": str(meta["Timestamp"]),
        }
    )
    assert list(datums([version_0])) == list(datums([emf(1, "scheduler_jobzone_jobs_held_total", 3.0)]))
    assert len(list(datums([version_0]))) == 1


def test_every_widget_is_drawn_into_one_png(cloudwatch: Any, tmp_path: Path) -> None:
    put_all(cloudwatch, [emf(1, "scheduler_jobzone_jobs_held_total", 1.0)])
    widgets = read_widgets(
        cloudwatch, CLUSTER, Window(START, START + timedelta(minutes=1), PERIOD), node_groups={}
    )
    assert [widget.title for widget in widgets] == list(widget_specs())
    gpu = next(widget for widget in widgets if widget.title.startswith("GPU utilisation"))
    assert gpu.lines == []  # no GPU here: the panel says why (NO_GPU_NOTE)
    path = render(widgets, "test", tmp_path / "picture.png", (START, START + timedelta(minutes=1)))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
