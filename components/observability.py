"""CloudWatch monitoring of the stack (``observability.enabled``).

- The ``amazon-cloudwatch-observability`` EKS add-on at the pinned version, checked against what
  EKS offers in the region for the cluster's Kubernetes version. Its ``cloudwatch-agent``
  ServiceAccount gets AWS credentials through EKS Pod Identity (a role of
  ``components/observability_iam.py``, associated by the add-on itself). Its configuration values
  extend the DCGM exporter's instance-type allow-list with every GPU type the stack's node groups
  (and the NodePools made from them) can launch, and add our own metrics to the agent: the
  extender's, the webhook's and the scheduler's ``/metrics``, written as EMF into the
  ``GPUScheduler`` namespace with the dimension sets the metric specs name.
- A dashboard and one alarm per metric spec with an alarm (render/metric_specs.py),
  optionally sending to an SNS topic.
"""

import json
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from components.cluster import Cluster
from components.observability_iam import AGENT_SERVICE_ACCOUNT, agent_identity
from components.stack_config.observability import (
    ADDON_VERSION,
    OBSERVABILITY_ADDON,
    ObservabilitySettings,
    addon_version_tuple,
)
from components.stack_config.validation import PROJECT, StackConfigError
from render.cloudwatch_agent_facts import assumed_schema
from render.cloudwatch_alarms import alarm_definitions
from render.cloudwatch_dashboard import DASHBOARD_PERIOD_SECONDS, dashboard_body
from render.dcgm_coverage import dcgm_affinity
from render.emf_rules import agents_values
from render.metric_queries import MetricQueryError, check_searches
from render.metric_specs import METRIC_SPECS


def check_offered(pinned: str, newest_offered: str, region: str, kubernetes_version: str) -> str:
    """``pinned`` if the region offers it (no newer than the newest version EKS lists there for
    the cluster's Kubernetes version); an error naming the key otherwise."""
    key = f"{PROJECT}:observability.addonVersion"
    if not ADDON_VERSION.fullmatch(newest_offered or ""):
        raise StackConfigError(
            f"{key}: {region} offers no {OBSERVABILITY_ADDON} add-on for Kubernetes {kubernetes_version} "
            f"(EKS listed {newest_offered!r}); set observability.enabled to false there"
        )
    if addon_version_tuple(pinned) > addon_version_tuple(newest_offered):
        raise StackConfigError(
            f"{key}: {pinned} is not offered in {region} for Kubernetes {kubernetes_version}; the newest "
            f"there is {newest_offered}"
        )
    return pinned


def addon_configuration(cluster_name: str, region: str, gpu_instance_types: Sequence[str]) -> str:
    """The add-on's configuration values (JSON): the DCGM exporter on every GPU type the stack can
    launch, and the cluster scraper agent's configuration with our scrape and EMF rules."""
    return json.dumps(
        {
            "dcgmExporter": {"affinity": dcgm_affinity(gpu_instance_types)},
            "agents": agents_values(cluster_name, region),
        },
        sort_keys=True,
    )


def check_dashboard_searches(cluster_name: str, node_groups: Mapping[str, Sequence[str]]) -> None:
    """Fail before anything is declared when a node group's dashboard search is longer than
    CloudWatch accepts, naming the group (``metric_queries.SEARCH_EXPRESSION_LIMIT``)."""
    try:
        check_searches(cluster_name, node_groups, DASHBOARD_PERIOD_SECONDS, METRIC_SPECS)
    except MetricQueryError as error:
        raise StackConfigError(f"{PROJECT}:gpuNodeGroups: {error}") from error


class Observability(pulumi.ComponentResource):
    """The CloudWatch add-on with its agent's identity, the dashboard, the alarms."""

    addon: aws.eks.Addon
    role: aws.iam.Role
    dashboard: aws.cloudwatch.Dashboard
    alarms: dict[str, aws.cloudwatch.MetricAlarm]
    topic: aws.sns.Topic | None

    def __init__(
        self,
        name: str,
        settings: ObservabilitySettings,
        cluster: Cluster,
        node_groups: Mapping[str, Sequence[str]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``node_groups``: each GPU node group's name and the instance types it can launch."""
        super().__init__("gpu-scheduler-eks:index:Observability", name, None, opts)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        region = aws.get_region_output(opts=invoke).region
        offered = aws.eks.get_addon_version_output(
            addon_name=OBSERVABILITY_ADDON,
            kubernetes_version=cluster.kubernetes_version,
            most_recent=True,
            opts=invoke,
        ).version
        version = pulumi.Output.all(offered, region).apply(
            lambda args: check_offered(settings.addon_version, args[0], args[1], cluster.kubernetes_version)
        )
        gpu_types = [name for types in node_groups.values() for name in types]
        matches, assumption = assumed_schema(settings.addon_version)
        (pulumi.log.info if matches else pulumi.log.warn)(assumption, resource=self)

        identity = agent_identity(name, cluster.name, self)
        self.role = identity.role
        waits_for: list[pulumi.Resource] = [identity.policy, cluster.system_node_group]
        if cluster.pod_identity_agent is not None:
            waits_for.append(cluster.pod_identity_agent)
        self.addon = aws.eks.Addon(
            f"{name}-addon",
            cluster_name=cluster.name,
            addon_name=OBSERVABILITY_ADDON,
            addon_version=version,
            configuration_values=region.apply(lambda r: addon_configuration(cluster.name, r, gpu_types)),
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(
                    role_arn=self.role.arn, service_account=AGENT_SERVICE_ACCOUNT
                )
            ],
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            opts=pulumi.ResourceOptions(parent=self, depends_on=waits_for),
        )

        check_dashboard_searches(cluster.name, node_groups)
        self.dashboard = aws.cloudwatch.Dashboard(
            f"{name}-dashboard",
            dashboard_name=f"{cluster.name}-gpu-scheduler",
            dashboard_body=region.apply(lambda r: dashboard_body(cluster.name, r, node_groups)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.topic = None
        actions: list[pulumi.Input[str]] = []
        if settings.alarm_topic:
            self.topic = aws.sns.Topic(
                f"{name}-alarms",
                name=f"{cluster.name}-gpu-scheduler-alarms",
                opts=pulumi.ResourceOptions(parent=self),
            )
            actions = [self.topic.arn]
        self.alarms = {
            definition.key: aws.cloudwatch.MetricAlarm(
                f"{name}-{definition.key}",
                **definition.arguments,
                alarm_actions=actions,
                ok_actions=actions,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for definition in alarm_definitions(cluster.name, settings.alarms)
        }
        self.register_outputs(
            {"dashboardName": self.dashboard.dashboard_name, "addonVersion": self.addon.addon_version}
        )
