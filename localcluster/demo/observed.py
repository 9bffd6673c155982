"""``make demo OBSERVE=1``: the CloudWatch pipeline beside the demo, and its picture.

While the demo runs, the OpenTelemetry Collector (``make otelcol``) scrapes the deployed webhook,
extender (extender modes) and scheduler and sends EMF to a local moto server
(``localcluster.services.cloudwatch_pipeline``). At the end the metrics are put into moto's
CloudWatch as CloudWatch extracts them from EMF, each widget the dashboard declares is read back
with ``GetMetricData`` (``localcluster.services.cloudwatch_widgets``) and drawn into one PNG
(``localcluster.demo.dashboard_picture``).
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from localcluster.demo.dashboard_picture import render
from localcluster.host.probes import LOOPBACK
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import ControlPlane
from localcluster.services.cloudwatch_pipeline import COLLECTOR, LocalPipeline, local_pipeline
from localcluster.services.cloudwatch_widgets import Window, read_widgets
from localcluster.services.custom_scheduler import scheduler_secure_port
from localcluster.services.deployed_scheduler import DeployedRun
from localcluster.services.emf_metrics import emf_metadata

CLUSTER_NAME = "local-demo"
"""The ``ClusterName`` dimension the collector adds, as the agent adds the EKS cluster's name."""
PICTURE_PERIOD_SECONDS = 5
"""One value every 5 s (the dashboard's period is 60 s): the demo's pods are placed within a
minute, and this draws its shape."""
BASELINE_SCRAPES = 2
"""Scheduler scrapes before the demo's pods: a counter's first scrape is its baseline, sent as
no value, so what the pods do is counted from the next."""
TAIL_SCRAPES = 5
"""Scheduler scrapes after the demo's last pod, so the graphs show where the counts settled."""
SCHEDULER_METRICS = '"Name":"scheduler_'
"""How an EMF event of one of the scheduler's metrics declares it."""
SCRAPES_SECONDS = 60
"""How long to wait for either."""
PICTURE_DIR = Path(".cache/observe")


class CollectorMissing(FileNotFoundError):
    """The collector binary is not built; the message says how to build it."""


@dataclass(frozen=True)
class ObservedRun:
    pipeline: LocalPipeline
    started: datetime


def picture_path(mode: str) -> Path:
    return PICTURE_DIR / f"dashboard-{mode}.png"


def check_collector(bin_dir: Path) -> None:
    if not (bin_dir / COLLECTOR).is_file():
        raise CollectorMissing(f"missing {COLLECTOR} in {bin_dir}: run `make otelcol` first")


@contextlib.contextmanager
def observing(plane: ControlPlane, bin_dir: Path, deployed: DeployedRun) -> Iterator[ObservedRun]:
    """The collector scraping what ``deployed`` runs, writing to moto, until the block ends."""
    targets = []
    if deployed.webhook is not None:
        targets.append(f"{LOOPBACK}:{deployed.webhook.server.health_port}")
    if deployed.scheduler.extender is not None:
        targets.append(f"{LOOPBACK}:{deployed.scheduler.extender.health_port}")
    started = datetime.now(UTC)
    with local_pipeline(
        plane,
        bin_dir,
        plane.work_dir / "collector",
        cluster_name=CLUSTER_NAME,
        targets=targets,
        scheduler_target=f"{LOOPBACK}:{scheduler_secure_port(deployed.scheduler)}",
    ) as pipeline:
        _wait_for_scrapes(pipeline, started, BASELINE_SCRAPES, "scrapes before the demo's pods")
        yield ObservedRun(pipeline, started)


def _scheduler_scrapes_after(pipeline: LocalPipeline, moment: datetime) -> int:
    """How many scrapes of the scheduler after ``moment`` have sent EMF events (the distinct
    timestamps of events of its ``scheduler_`` metrics)."""
    stamp = moment.timestamp() * 1000
    return len(
        {
            at
            for message in pipeline.messages()
            if SCHEDULER_METRICS in message and (at := _stamp(message)) > stamp
        }
    )


def _wait_for_scrapes(pipeline: LocalPipeline, moment: datetime, scrapes: int, what: str) -> None:
    wait_for(
        lambda: _scheduler_scrapes_after(pipeline, moment) >= scrapes or None,
        SCRAPES_SECONDS,
        f"{scrapes} {what}",
    )


def _stamp(message: str) -> float:
    """An EMF event's timestamp (milliseconds); 0 for a line that is not one."""
    metadata = emf_metadata(message)
    return metadata[0] if metadata is not None else 0.0


def draw(observation: ObservedRun, mode: str, path: Path) -> Path:
    """Wait for scrapes after the demo's end, put the metrics into moto's CloudWatch, read back
    every widget and draw them into ``path``."""
    pipeline = observation.pipeline
    _wait_for_scrapes(pipeline, datetime.now(UTC), TAIL_SCRAPES, "scrapes after the demo's last pod")
    pipeline.publish_metrics()
    period = timedelta(seconds=PICTURE_PERIOD_SECONDS)
    start = observation.started.replace(microsecond=0)
    window = Window(start, datetime.now(UTC) + period, PICTURE_PERIOD_SECONDS)
    widgets = read_widgets(pipeline.cloudwatch(), CLUSTER_NAME, window, node_groups={})
    title = (
        f"gpu-scheduler dashboard, {mode} mode: make demo OBSERVE=1 read back from CloudWatch (moto) "
        f"with GetMetricData, {PICTURE_PERIOD_SECONDS}-second periods"
    )
    return render(widgets, title, path, (window.start, window.end))
