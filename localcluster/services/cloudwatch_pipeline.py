"""The CloudWatch pipeline on one machine: moto's server stands in for CloudWatch, and the
OpenTelemetry Collector (``make otelcol``: Prometheus receiver, awsemf exporter) scrapes the
running services and writes embedded-metric-format (EMF) events to it. It runs the configuration
the stack renders for the CloudWatch agent on EKS (``render/emf_rules.py``),
translated as the agent translates it (``render/agent_translation.py``); only where
the targets are and how the scheduler is authenticated differ (``local_scrape_config``).

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

from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane
from localcluster.services.emf_metrics import emf_metadata, put_all
from render.agent_translation import collector_config_from_agent
from render.emf_rules import SCHEDULER_JOB, SERVICES_JOB, agent_config, agent_scrape_config

COLLECTOR = "otelcol-emf"
CLOUDWATCH_REGION = "us-west-2"
LOCAL_SCRAPE_INTERVAL = "2s"
"""Fast enough that a counter has the two scrapes EMF needs for a delta within seconds (the
stack's agent scrapes every 60 s)."""
SCRAPE_TIMEOUT = "2s"
"""At most the interval, as Prometheus requires."""
KUBERNETES_META = "__meta_kubernetes_"
"""Labels that only Kubernetes service discovery sets: rules on them have nothing to act on
for the static targets of a local run."""
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": CLOUDWATCH_REGION,
}
"""moto accepts any; the exporter's SDK insists on some."""


@dataclass(frozen=True)
class LocalPipeline:
    """moto's Logs endpoint and the collector writing to it, into ``log_group``."""

    endpoint: str
    log_group: str

    def logs(self) -> Any:
        return boto3.client(
            "logs", region_name=CLOUDWATCH_REGION, endpoint_url=self.endpoint, **_client_credentials()
        )

    def cloudwatch(self) -> Any:
        return boto3.client(
            "cloudwatch", region_name=CLOUDWATCH_REGION, endpoint_url=self.endpoint, **_client_credentials()
        )

    def messages(self) -> list[str]:
        """Every log event the collector has written so far."""
        logs = self.logs()
        if not logs.describe_log_groups(logGroupNamePrefix=self.log_group)["logGroups"]:
            return []
        return [
            event["message"]
            for page in logs.get_paginator("filter_log_events").paginate(logGroupName=self.log_group)
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
            metadata = emf_metadata(message)
            for directive in metadata[1] if metadata is not None else []:
                for metric in directive["Metrics"]:
                    for dimensions in directive["Dimensions"]:
                        declared.add((directive["Namespace"], metric["Name"], tuple(sorted(dimensions))))
        return declared

    def logged_names(self) -> set[str]:
        """Every field of every event so far: the metric values and labels the log holds."""
        names: set[str] = set()
        for message in self.messages():
            with contextlib.suppress(ValueError):
                document = json.loads(message)
                if isinstance(document, dict):
                    names.update(document)
        return names


def local_scrape_config(
    rendered: dict[str, Any],
    targets: dict[str, Sequence[str]],
    scheduler_tls: dict[str, object],
) -> dict[str, Any]:
    """The agent's Prometheus configuration (``rendered``) as a local run can use it: each job's
    Kubernetes discovery replaced by ``targets[job]`` (a job without targets is left out) and the
    rules on discovery labels with it; the scheduler's job authenticated by ``scheduler_tls``
    instead of the agent's ServiceAccount token; scraped every ``LOCAL_SCRAPE_INTERVAL``. Every other
    rule (the cluster label, the keep rules) is the rendered one."""
    jobs = []
    for job in rendered["scrape_configs"]:
        if not targets.get(job["job_name"]):
            continue
        local = {
            key: value for key, value in job.items() if key not in ("kubernetes_sd_configs", "authorization")
        }
        local["static_configs"] = [{"targets": list(targets[job["job_name"]])}]
        local["relabel_configs"] = [
            rule
            for rule in job.get("relabel_configs", [])
            if not any(label.startswith(KUBERNETES_META) for label in rule.get("source_labels", []))
        ]
        if job["job_name"] == SCHEDULER_JOB:
            local["tls_config"] = dict(scheduler_tls)
        jobs.append(local)
    return {
        "global": {
            **rendered.get("global", {}),
            "scrape_interval": LOCAL_SCRAPE_INTERVAL,
            "scrape_timeout": SCRAPE_TIMEOUT,
        },
        "scrape_configs": jobs,
    }


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
    agent: dict[str, Any] | None = None,
) -> Iterator[LocalPipeline]:
    """moto on a loopback port and the collector running the agent's configuration (``agent``,
    by default the one the stack renders for ``cluster_name``), scraping ``targets`` (plain HTTP)
    and the scheduler's HTTPS port as the control plane's admin (the scheduler asks the API
    server). An agent configuration the agent would refuse fails before anything starts."""
    (port,) = plane.processes.reserve_ports(1)
    moto = ThreadedMotoServer(ip_address=LOOPBACK, port=port, verbose=False)
    moto.start()
    try:
        endpoint = f"http://{LOOPBACK}:{port}"
        admin = plane.admin.files
        scrape = local_scrape_config(
            agent_scrape_config(cluster_name),
            {SERVICES_JOB: targets, SCHEDULER_JOB: [scheduler_target] if scheduler_target else []},
            # kube-scheduler serves a certificate it signed itself at start: nothing to verify it by.
            {"cert_file": str(admin.cert), "key_file": str(admin.key), "insecure_skip_verify": True},
        )
        config = collector_config_from_agent(
            agent if agent is not None else agent_config(cluster_name, CLOUDWATCH_REGION),
            scrape,
            logs_endpoint=endpoint,
        )
        work_dir.mkdir(parents=True, exist_ok=True)
        config_path = work_dir / "collector.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        collector = plane.processes.start(
            COLLECTOR, [str(bin_dir / COLLECTOR), f"--config=file:{config_path}"], env=CREDENTIALS
        )
        try:
            yield LocalPipeline(endpoint, config["exporters"]["awsemf"]["log_group_name"])
        finally:
            collector.stop()
    finally:
        moto.stop()
