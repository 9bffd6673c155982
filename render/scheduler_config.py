"""The custom scheduler's KubeSchedulerConfiguration, rendered as data.

A pure module (no Pulumi import): the Pulumi program puts its output in a ConfigMap
and the local cluster writes it to a file, changing only file paths, the extender URL
and the kubeconfig, so both run the same configuration.
"""

import hashlib
from dataclasses import dataclass, field
from typing import Any

import yaml

from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME
from contracts.modes import SCHEDULER_MODES, SchedulerMode, node_cache_capable, uses_extender
from contracts.server import FILTER_PATH, PREEMPT_PATH, PRIORITIZE_PATH, TLS_PORT
from policy.setting_schema import (
    CAPACITY_TYPE_PLUGIN,
    CLIENT_QPS_SETTING,
    GPU_SCHEDULER_PLUGIN,
    JOB_ZONE_PLUGIN,
)
from render.policy_choices import PolicyChoices

CAPACITY_TYPE_WEIGHT = 20
"""CapacityType's score weight: twice GPUScheduler's, so a pod that prefers a capacity type
gets it over a larger GPU of the other type (both scores are 0..100)."""
CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"

EXTENDER_PORT = TLS_PORT
"""The extender's HTTPS port, on the Service and the container."""
EXTENDER_SERVICE_HOST = f"{EXTENDER_SERVICE}.{NAMESPACE}.svc"
"""The name kube-scheduler dials; the extender's server certificate must carry it."""
EXTENDER_CLIENT_DIR = "/etc/extender-client"
"""Where the scheduler finds its client certificate (Secret ``extender-client-tls``)."""


EXTENDER_HTTP_TIMEOUT_SECONDS = 2
"""kube-scheduler's extender ``httpTimeout``: twice the extender's node-lookup deadline (1 s), and
four times a 5,000-node ``/filter`` on the server (about 0.5 s)."""
MIN_EXTENDER_HTTP_TIMEOUT_SECONDS = 2
"""Below this a /filter that waits its full --node-lookup-timeout (1 s) would arrive too late."""
MAX_EXTENDER_HTTP_TIMEOUT_SECONDS = 60
"""kube-scheduler schedules one pod at a time: every second of this can stall every pending pod."""


@dataclass(frozen=True)
class ExtenderEndpoint:
    """How kube-scheduler reaches the extender (mutual TLS, filter + prioritize)."""

    url_prefix: str = f"https://{EXTENDER_SERVICE_HOST}:{EXTENDER_PORT}"
    ca_file: str = f"{EXTENDER_CLIENT_DIR}/ca.crt"
    cert_file: str = f"{EXTENDER_CLIENT_DIR}/tls.crt"
    key_file: str = f"{EXTENDER_CLIENT_DIR}/tls.key"
    http_timeout: str = f"{EXTENDER_HTTP_TIMEOUT_SECONDS}s"
    weight: int = 1


@dataclass(frozen=True)
class LeaderElection:
    """The scheduler's own Lease, apart from the default scheduler's."""

    lease_name: str = SCHEDULER_NAME
    lease_namespace: str = NAMESPACE
    lease_duration: str = "15s"
    renew_deadline: str = "10s"
    retry_period: str = "2s"


@dataclass(frozen=True)
class SchedulerConfig:
    """Everything the rendered configuration depends on."""

    mode: SchedulerMode
    scheduler_name: str = SCHEDULER_NAME
    plugin_weight: int = 10
    capacity_type_weight: int = CAPACITY_TYPE_WEIGHT
    """Plugin mode: CapacityType's score weight."""
    extender: ExtenderEndpoint = field(default_factory=ExtenderEndpoint)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    kubeconfig: str = ""
    """Empty in the cluster (in-cluster credentials); a file path for a local run."""
    policy: PolicyChoices = field(default_factory=PolicyChoices)
    """Plugin mode: GPUScheduler's, CapacityType's and JobZone's args (the extender modes: the
    extender's flags)."""
    percentage_of_nodes_to_score: int | None = None
    """The profile's ``percentageOfNodesToScore`` (1..100); None = kube-scheduler's adaptive default."""
    client_qps: int | None = CLIENT_QPS_SETTING.default
    """``clientConnection.qps`` and ``burst`` (both this value): the rate kube-scheduler's client
    sends Bindings and status updates at; the stack's ``scheduler.clientQps`` by default, None =
    kube-scheduler's own defaults, 50 and 100."""

    def __post_init__(self) -> None:
        if (
            self.client_qps is not None
            and not CLIENT_QPS_SETTING.low <= self.client_qps <= CLIENT_QPS_SETTING.high
        ):
            raise ValueError(
                f"client_qps must be {CLIENT_QPS_SETTING.bounds()} or None (kube-scheduler's default 50/100)"
            )
        if (
            self.percentage_of_nodes_to_score is not None
            and not 1 <= self.percentage_of_nodes_to_score <= 100
        ):
            raise ValueError("percentage_of_nodes_to_score must be 1..100 or None (the adaptive default)")
        if self.mode not in SCHEDULER_MODES:
            raise ValueError(f"scheduler mode must be one of {', '.join(SCHEDULER_MODES)}, not {self.mode!r}")


UNSCHEDULABLE_RETRY = "30s"
"""extender-cached: kube-scheduler's ``--pod-max-in-unschedulable-pods-duration`` (default 5m).

A pod the extender refused waits for a cluster event to be retried. When a Node is relabelled,
kube-scheduler's informer can see it and retry the pod before the extender's own watch has
delivered the new label; the retry is refused on the old label and, with no further event, the
pod would wait the default 5 minutes. This bounds that wait (about one flush period, 30 s, more).
The flag is deprecated upstream but present in 1.35."""


def scheduler_mode_flags(mode: SchedulerMode) -> tuple[str, ...]:
    """Command-line flags the mode's scheduler needs besides ``--config`` (same in-cluster and local)."""
    if node_cache_capable(mode):
        return (f"--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_RETRY}",)
    return ()


UPSTREAM_PREEMPTION = "DefaultPreemption"
"""kube-scheduler's preemption plugin, which JobZone runs in its place in plugin mode."""


def plugin_mode_plugins(weight: int, capacity_type_weight: int = CAPACITY_TYPE_WEIGHT) -> dict[str, Any]:
    """GPUScheduler, then CapacityType, at preFilter, filter and score, first at preFilter and filter;
    JobZone at its own points (preFilter, filter, reserve, permit) through ``multiPoint``, and as the
    profile's only queueSort, in place of PrioritySort.

    preFilter reads the pod's requirement once per cycle (and skips pods without a minimum);
    without it Filter and Score recompute it for every node. A plugin enabled only at an
    extension point runs after the defaults (which kube-scheduler enables through
    ``multiPoint``); one enabled in ``multiPoint`` *and* at the extension point is an override
    and runs first (``expandMultiPointPlugins``, kube-scheduler 1.35). First, a node whose GPUs
    are too small, or of a capacity type the pod refuses, is refused by our cheap label checks
    before NodeResourcesFit and the other filters run on it, and the reason recorded is the
    permanent one. CapacityType's preScore (which skips pods without a choice) is enabled
    through ``multiPoint``.

    JobZone runs first at postFilter, in DefaultPreemption's place (disabled at every point, its
    preEnqueue too, through ``multiPoint``): a member of a
    job not yet placed gives up its zone there and preempts nothing for itself alone, and every
    other pod gets DefaultPreemption's own search, run by JobZone with one rule added: a bound
    member of a job is never a victim (docs/zones.md#plugin-mode-the-jobzone-plugin).

    A profile has exactly one queueSort. JobZone's keeps a job's members together in the queue and
    PrioritySort's order for every other pod; ``disabled: *`` there keeps ``multiPoint`` from adding
    PrioritySort beside it.
    """
    ours = [(GPU_SCHEDULER_PLUGIN, weight), (CAPACITY_TYPE_PLUGIN, capacity_type_weight)]
    return {
        "queueSort": {"enabled": [{"name": JOB_ZONE_PLUGIN}], "disabled": [{"name": "*"}]},
        "multiPoint": {
            "enabled": [*({"name": name, "weight": w} for name, w in ours), {"name": JOB_ZONE_PLUGIN}],
            "disabled": [{"name": UPSTREAM_PREEMPTION}],
        },
        "preFilter": {"enabled": [{"name": name} for name, _ in ours]},
        "postFilter": {"enabled": [{"name": JOB_ZONE_PLUGIN}]},
        "filter": {"enabled": [{"name": name} for name, _ in ours]},
        "score": {"enabled": [{"name": name, "weight": w} for name, w in ours]},
    }


def render_scheduler_config(config: SchedulerConfig) -> dict[str, Any]:
    """The KubeSchedulerConfiguration document for ``config.mode``."""
    election = config.leader_election
    document: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceLock": "leases",
            "resourceName": election.lease_name,
            "resourceNamespace": election.lease_namespace,
            "leaseDuration": election.lease_duration,
            "renewDeadline": election.renew_deadline,
            "retryPeriod": election.retry_period,
        },
    }
    if config.kubeconfig:
        document["clientConnection"] = {"kubeconfig": config.kubeconfig}
    if config.client_qps is not None:
        document.setdefault("clientConnection", {}).update(
            {"qps": config.client_qps, "burst": config.client_qps}
        )
    profile: dict[str, Any] = {"schedulerName": config.scheduler_name}
    if config.percentage_of_nodes_to_score is not None:
        profile["percentageOfNodesToScore"] = config.percentage_of_nodes_to_score
    document["profiles"] = [profile]
    if not uses_extender(config.mode):
        profile["plugins"] = plugin_mode_plugins(config.plugin_weight, config.capacity_type_weight)
        profile["pluginConfig"] = config.policy.plugin_config()
    else:
        endpoint = config.extender
        # No managedResources / ignoredByScheduler: the extender counts no GPUs, so
        # NodeResourcesFit must keep checking nvidia.com/gpu.
        document["extenders"] = [
            {
                "urlPrefix": endpoint.url_prefix,
                "filterVerb": FILTER_PATH.lstrip("/"),
                "prioritizeVerb": PRIORITIZE_PATH.lstrip("/"),
                # Keeps a running job whole: preemption's candidates whose victims include a
                # member of a job of more than one pod are dropped (policy/job_preemption.py).
                "preemptVerb": PREEMPT_PATH.lstrip("/"),
                "weight": endpoint.weight,
                "enableHTTPS": True,
                "tlsConfig": {
                    "caFile": endpoint.ca_file,
                    "certFile": endpoint.cert_file,
                    "keyFile": endpoint.key_file,
                },
                "httpTimeout": endpoint.http_timeout,
                "nodeCacheCapable": node_cache_capable(config.mode),
                "ignorable": False,
            }
        ]
    return document


def scheduler_config_yaml(config: SchedulerConfig) -> str:
    """The document as YAML, keys in a stable order."""
    return yaml.safe_dump(render_scheduler_config(config), sort_keys=False)


def config_checksum(text: str) -> str:
    """SHA-256 of a rendered configuration, for a pod-template annotation that rolls pods."""
    return hashlib.sha256(text.encode()).hexdigest()
