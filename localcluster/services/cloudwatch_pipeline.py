"""The CloudWatch pipeline on one machine: moto's server stands in for CloudWatch, and the
OpenTelemetry Collector (``make otelcol``: Prometheus receiver, awsemf exporter) scrapes the
running services and writes embedded-metric-format (EMF) events to it with the same rules the
CloudWatch agent is given on EKS (``components/render/emf_rules.py``).

``emf_metrics`` reads the events back through moto's Logs API and says which metrics with
which dimension sets they declare, as CloudWatch would extract them; ``publish_metrics`` puts
them into moto's CloudWatch as CloudWatch would (``localcluster.services.emf_metrics``), so
``GetMetricData`` reads them back.
"""

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import yaml
from moto.server import ThreadedMotoServer

from components.render.emf_rules import collector_config
from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane
from localcluster.services.emf_metrics import put_all

COLLECTOR = "otelcol-emf"
REGION = "us-west-2"
LOG_GROUP = "/gpu-scheduler/local/prometheus"
LOG_STREAM = "collector"
SCRAPE_INTERVAL = "2s"
"""Fast enough that a counter has the two scrapes EMF needs for a delta within seconds."""
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": REGION}
"""moto accepts any; the exporter's SDK insists on some."""


@dataclass(frozen=True)
class LocalPipeline:
    """moto's Logs endpoint and the collector writing to it."""

    endpoint: str

    def logs(self) -> Any:
        return boto3.client("logs", region_name=REGION, endpoint_url=self.endpoint, **_client_credentials())

    def cloudwatch(self) -> Any:
        return boto3.client(
            "cloudwatch", region_name=REGION, endpoint_url=self.endpoint, **_client_credentials()
        )

    def messages(self) -> list[str]:
        """Every log event the collector has written so far."""
        logs = self.logs()
        if not logs.describe_log_groups(logGroupNamePrefix=LOG_GROUP)["logGroups"]:
            return []
        return [
            event["message"]
            for page in logs.get_paginator("filter_log_events").paginate(logGroupName=LOG_GROUP)
            for event in page["events"]
        ]

    def publish_metrics(self) -> int:
        """Put every metric the events declare into CloudWatch (once: a second call puts them
        twice); how many data were put."""
        return put_all(self.cloudwatch(), self.messages())

    def emf_metrics(self) -> set[tuple[str, str, tuple[str, ...]]]:
        """(namespace, metric name, dimension set sorted) of every metric the EMF events declare so far."""
        declared = set()
        for message in self.messages():
            document = json.loads(message)
            for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
                for metric in directive["Metrics"]:
                    for dimensions in directive["Dimensions"]:
                        declared.add((directive["Namespace"], metric["Name"], tuple(sorted(dimensions))))
        return declared


def _client_credentials() -> dict[str, str]:
    return {"aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": "testing"}


@contextlib.contextmanager
def local_pipeline(
    plane: ControlPlane,
    bin_dir: Path,
    work_dir: Path,
    *,
    cluster_name: str,
    targets: Sequence[str],
    scheduler_target: str,
) -> Iterator[LocalPipeline]:
    """moto on a loopback port and the collector scraping ``targets`` (plain HTTP) and the
    scheduler's HTTPS port as the control plane's admin (the scheduler asks the API server)."""
    (port,) = plane.processes.reserve_ports(1)
    moto = ThreadedMotoServer(ip_address=LOOPBACK, port=port, verbose=False)
    moto.start()
    try:
        endpoint = f"http://{LOOPBACK}:{port}"
        admin = plane.admin.files
        config = collector_config(
            cluster_name=cluster_name,
            region=REGION,
            targets=targets,
            logs_endpoint=endpoint,
            log_group=LOG_GROUP,
            log_stream=LOG_STREAM,
            scheduler_target=scheduler_target,
            # kube-scheduler serves a certificate it signed itself at start: nothing to verify it by.
            scheduler_tls={
                "cert_file": str(admin.cert),
                "key_file": str(admin.key),
                "insecure_skip_verify": True,
            },
            interval=SCRAPE_INTERVAL,
        )
        work_dir.mkdir(parents=True, exist_ok=True)
        config_path = work_dir / "collector.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        collector = plane.processes.start(
            COLLECTOR, [str(bin_dir / COLLECTOR), f"--config=file:{config_path}"], env=CREDENTIALS
        )
        try:
            yield LocalPipeline(endpoint)
        finally:
            collector.stop()
    finally:
        moto.stop()
