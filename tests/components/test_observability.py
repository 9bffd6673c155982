"""``observability`` under mocks: the CloudWatch add-on with its agent's Pod Identity, the DCGM
exporter on every GPU type the stack can launch, the dashboard and alarms; nothing when off."""

import json
from typing import Any

import pytest
from moto import mock_aws

from components.stack import build_stack
from components.stack_config import StackConfigError
from components.stack_config.observability import DEFAULT_ADDON_VERSION, OBSERVABILITY_ADDON
from render.cloudwatch_agent_facts import (
    EMF_PROCESSOR_KEYS,
    METRIC_DECLARATION_KEYS,
    METRIC_DECLARATION_REQUIRED,
    PROMETHEUS_KEYS,
    AgentConfigError,
    assumed_schema,
    chart_creates_agent,
    check_agent_config,
    refused_keys,
    skipped_rules,
)
from render.cloudwatch_dashboard import drawn_metrics
from render.dcgm_coverage import chart_affinity, chart_allow_list, dcgm_instance_types
from render.metric_specs import METRIC_SPECS, alarm_keys
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, stack_config
from tests.components.mocks import StackMocks, StackRun, run_stack

ADDON = "aws:eks/addon:Addon"
OBSERVABILITY_TYPES = (
    "aws:cloudwatch/dashboard:Dashboard",
    "aws:cloudwatch/metricAlarm:MetricAlarm",
    "aws:sns/topic:Topic",
    "gpu-scheduler-eks:index:Observability",
)
NEW_GROUP = {"name": "blackwell", "instanceTypes": ["g7e.2xlarge", "g7.2xlarge"]}
"""GPU types the chart's DCGM allow-list lacks (checked below, so a chart bump that adds them shows)."""
OBSERVED = {"enabled": True, "alarmTopic": True}


def run(values: dict[str, Any], mocks: StackMocks | None = None) -> StackRun:
    config = stack_config(values)
    with mock_aws():
        return run_stack(lambda: build_stack(config), mocks)


@pytest.fixture(scope="module")
def observed_run() -> StackRun:
    """Karpenter over three groups (one of types the chart does not list), observability on, in
    extender mode (the extender's NetworkPolicy and the webhook's both take the scrape rule)."""
    return run(
        {
            "schedulerMode": "extender",
            "autoscaling": "karpenter",
            "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP, NEW_GROUP],
            "observability": OBSERVED,
        }
    )


def cloudwatch_addon(run: StackRun) -> dict[str, Any]:
    [addon] = [r.plain for r in run.of_type(ADDON) if r.plain["addonName"] == OBSERVABILITY_ADDON]
    return addon


def test_nothing_is_declared_when_observability_is_off(extender_run: StackRun) -> None:
    for type_ in OBSERVABILITY_TYPES:
        assert extender_run.of_type(type_) == []
    assert [r for r in extender_run.of_type(ADDON) if r.plain["addonName"] == OBSERVABILITY_ADDON] == []
    assert "cloudwatchDashboard" not in extender_run.outputs


def test_the_addon_is_pinned_and_its_agent_gets_its_role_through_pod_identity(
    observed_run: StackRun,
) -> None:
    """The role's policy and trust: tests/components/test_observability_iam.py."""
    addon = cloudwatch_addon(observed_run)
    assert addon["addonVersion"] == DEFAULT_ADDON_VERSION
    assert addon["clusterName"] == "gpu-scheduler-test"
    [association] = addon["podIdentityAssociations"]
    assert association["serviceAccount"] == "cloudwatch-agent"
    policy = observed_run.one("aws:iam/rolePolicy:RolePolicy", "observability-agent-policy")
    assert ("aws:iam/role:Role", "observability-agent-role") in policy.depends_on
    addon_resource = next(
        r for r in observed_run.of_type(ADDON) if r.plain["addonName"] == OBSERVABILITY_ADDON
    )
    assert ("aws:iam/rolePolicy:RolePolicy", "observability-agent-policy") in addon_resource.depends_on
    assert ("aws:eks/addon:Addon", "cluster-pod-identity-agent") in addon_resource.depends_on
    assert ("podIdentityAssociations", "aws:iam/role:Role", "observability-agent-role") in (
        addon_resource.property_dependencies
    )


def test_dcgm_runs_on_every_gpu_type_the_node_groups_and_node_pools_can_launch(
    observed_run: StackRun,
) -> None:
    values = json.loads(cloudwatch_addon(observed_run)["configurationValues"])
    admitted = dcgm_instance_types(values["dcgmExporter"]["affinity"])
    group_types = {
        name for r in observed_run.of_type("aws:eks/nodeGroup:NodeGroup") for name in r.plain["instanceTypes"]
    }
    group_types -= {"m6i.large"}  # the system group's
    pool_types = {
        value
        for pool in observed_run.of_type("kubernetes:karpenter.sh/v1:NodePool")
        for requirement in pool.plain["spec"]["template"]["spec"]["requirements"]
        if requirement["key"] == "node.kubernetes.io/instance-type"
        for value in requirement["values"]
    }
    assert pool_types, "Karpenter's NodePools list their instance types"
    launchable = group_types | pool_types
    assert {"g7e.2xlarge", "g7.2xlarge", "g5.xlarge", "g4dn.xlarge", "g6e.xlarge"} <= launchable
    assert launchable <= admitted
    chart_types = chart_allow_list()
    assert not {"g7e.2xlarge", "g7.2xlarge"} & set(chart_types), "the chart lacks them: the stack adds them"
    assert set(chart_types) <= admitted, "the chart's own list is kept (a Helm list is replaced, not merged)"


def test_the_dcgm_affinity_is_the_charts_whole_with_the_added_types_beside_its_own(
    observed_run: StackRun,
) -> None:
    """The chart's affinity (6.4.0) also keeps the exporter off Fargate; replacing the value must
    keep that expression and every other, changing only the instance-type list."""
    values = json.loads(cloudwatch_addon(observed_run)["configurationValues"])
    [term] = values["dcgmExporter"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]} in (
        term["matchExpressions"]
    )
    [chart_term] = chart_affinity()["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert len(term["matchExpressions"]) == len(chart_term["matchExpressions"]) == 2
    for ours, charts in zip(term["matchExpressions"], chart_term["matchExpressions"], strict=True):
        assert (ours["key"], ours["operator"]) == (charts["key"], charts["operator"])
        assert ours["values"][: len(charts["values"])] == charts["values"], (
            "the chart's own first, in its order"
        )
        added = ours["values"][len(charts["values"]) :]
        if charts["key"] == "node.kubernetes.io/instance-type":
            assert {"g7e.2xlarge", "g7.2xlarge"} <= set(added)
        else:
            assert added == []


def test_one_agent_scrapes_our_metrics_into_the_namespace_the_dashboard_reads(observed_run: StackRun) -> None:
    values = json.loads(cloudwatch_addon(observed_run)["configurationValues"])
    node_agent, scraper = values["agents"]
    assert node_agent == {"name": "cloudwatch-agent"}, "the node agent keeps the add-on's own configuration"
    assert (scraper["name"], scraper["mode"]) == ("gpu-scheduler-scraper", "deployment")
    assert "replicas" not in scraper, "one replica (the chart's default): each target scraped once"
    prometheus = scraper["config"]["logs"]["metrics_collected"]["prometheus"]
    assert prometheus["emf_processor"]["metric_namespace"] == "GPUScheduler"
    declared = {
        (selector.strip("^$"), tuple(dimensions))
        for rule in prometheus["emf_processor"]["metric_declaration"]
        for selector in rule["metric_selectors"]
        for dimensions in rule["dimensions"]
    }
    drawn = {
        (metric.name, metric.dimensions)
        for metric in drawn_metrics(
            observed_run.one("aws:cloudwatch/dashboard:Dashboard").plain["dashboardBody"]
        )
        if metric.namespace == "GPUScheduler"
    }
    assert drawn
    assert drawn <= declared
    jobs = {job["job_name"] for job in scraper["prometheus"]["config"]["scrape_configs"]}
    assert jobs == {"gpu-scheduler-services", "gpu-scheduler"}


def test_the_chart_creates_every_agent_the_stack_renders(observed_run: StackRun) -> None:
    """The chart's template (6.4.0) skips ``cloudwatch-agent-cluster-scraper`` unless OTel
    Container Insights is on; the stack leaves it off, so no agent of ours may have that name."""
    values = json.loads(cloudwatch_addon(observed_run)["configurationValues"])
    assert "otelContainerInsights" not in values, "the chart's default (off) is kept"
    names = [agent["name"] for agent in values["agents"]]
    assert [name for name in names if not chart_creates_agent(name)] == []
    assert not chart_creates_agent("cloudwatch-agent-cluster-scraper"), "the rule itself, as the chart has it"
    assert chart_creates_agent("cloudwatch-agent-cluster-scraper", otel_container_insights=True)


def test_the_agent_configuration_has_only_keys_the_agent_schema_allows(observed_run: StackRun) -> None:
    """Held to the keys of agent v1.300070.0 (translator/config/schema.json) and the two keys its
    translation requires of a rule (translator/translate/otel/exporter/awsemf/prometheus.go), as
    written down in render/cloudwatch_agent_facts.py."""
    values = json.loads(cloudwatch_addon(observed_run)["configurationValues"])
    [scraper] = [agent for agent in values["agents"] if "config" in agent]
    config = scraper["config"]
    assert refused_keys(config) == []
    assert skipped_rules(config) == []
    prometheus = config["logs"]["metrics_collected"]["prometheus"]
    assert set(prometheus) <= PROMETHEUS_KEYS
    assert set(prometheus["emf_processor"]) <= EMF_PROCESSOR_KEYS
    rules = prometheus["emf_processor"]["metric_declaration"]
    assert rules
    for rule in rules:
        assert set(rule) <= METRIC_DECLARATION_KEYS, rule
        assert set(METRIC_DECLARATION_REQUIRED) <= set(rule), rule


def test_preview_says_which_addon_version_and_schema_it_assumed() -> None:
    matches, line = assumed_schema(DEFAULT_ADDON_VERSION)
    assert matches
    assert line.startswith(
        "CloudWatch add-on v6.4.0-eksbuild.1: its agent configuration is written for chart "
        "amazon-cloudwatch-observability 6.4.0 and CloudWatch agent v1.300070.0"
    )
    assert line.endswith(
        "check the values with aws eks describe-addon-configuration "
        "(docs/observability.md#before-the-first-deploy)"
    )
    newer, warning = assumed_schema("v6.5.0-eksbuild.1")
    assert not newer
    assert "the pinned add-on ships chart 6.5.0, so read its sources again before deploying" in warning


def test_the_facts_catch_the_collector_format_and_a_rule_without_its_required_keys() -> None:
    """The controls: the collector's spelling of a rule is refused, a rule lacking a required key
    is one the agent skips."""
    collector_rule = {"dimensions": [["ClusterName"]], "metric_name_selectors": ["^x$"]}
    no_source = {"metric_selectors": ["^x$"], "dimensions": [["ClusterName"]]}
    config = {
        "logs": {
            "metrics_collected": {
                "prometheus": {"emf_processor": {"metric_declaration": [collector_rule, no_source]}}
            }
        }
    }
    assert refused_keys(config) == [
        "logs.metrics_collected.prometheus.emf_processor.metric_declaration[0].metric_name_selectors"
    ]
    assert skipped_rules(config) == [0, 1]
    with pytest.raises(AgentConfigError, match=r"metric_declaration\[0\]\.metric_name_selectors"):
        check_agent_config(config)


def test_the_dashboard_draws_each_node_group_and_every_spec(observed_run: StackRun) -> None:
    dashboard = observed_run.one("aws:cloudwatch/dashboard:Dashboard").plain
    assert dashboard["dashboardName"] == "gpu-scheduler-test-gpu-scheduler"
    assert observed_run.outputs["cloudwatchDashboard"] == "gpu-scheduler-test-gpu-scheduler"
    body = json.loads(dashboard["dashboardBody"])
    titles = [widget["properties"]["title"] for widget in body["widgets"]]
    assert titles == list(dict.fromkeys(spec.widget for spec in METRIC_SPECS))
    [gpu] = [w for w in body["widgets"] if w["properties"]["title"] == "GPU utilisation by node group"]
    labels = [line[0]["label"] for line in gpu["properties"]["metrics"]]
    assert labels == ["mixed GPU busy", "l40s GPU busy", "blackwell GPU busy"]
    assert (
        'InstanceType="g7e.2xlarge" OR InstanceType="g7.2xlarge"'
        in gpu["properties"]["metrics"][2][0]["expression"]
    )
    assert {w["properties"]["region"] for w in body["widgets"]} == {"us-west-2"}
    drawn = {(metric.namespace, metric.name) for metric in drawn_metrics(dashboard["dashboardBody"])}
    assert drawn == {(spec.namespace, spec.name) for spec in METRIC_SPECS}


def test_one_alarm_per_spec_with_an_alarm_sending_to_the_topic(observed_run: StackRun) -> None:
    alarms = {
        r.plain["name"]: r.plain for r in observed_run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    }
    assert set(alarms) == {f"gpu-scheduler-test-{key}" for key in alarm_keys()}
    topic = observed_run.one("aws:sns/topic:Topic")
    for alarm in alarms.values():
        assert len(alarm["alarmActions"]) == 1
        assert alarm["alarmActions"] == alarm["okActions"]
        assert ("aws:sns/topic:Topic", topic.name) in {
            (type_, name) for _, type_, name in _property_sources(observed_run, alarm["name"], "alarmActions")
        }
    memory = alarms["gpu-scheduler-test-gpuMemoryUtilization"]
    assert memory["threshold"] == 95
    assert memory["comparisonOperator"] == "GreaterThanThreshold"
    assert memory["evaluationPeriods"] == 10
    [query] = memory["metricQueries"]
    assert query["expression"].startswith(
        'SELECT MAX(node_gpu_memory_utilization) FROM SCHEMA("ContainerInsights"'
    )
    stuck = alarms["gpu-scheduler-test-podsScheduled"]
    expression = next(q for q in stuck["metricQueries"] if q["returnData"])["expression"]
    assert expression == "IF((FILL(g0, 0) + FILL(g1, 0) + FILL(g2, 0)) > 0, FILL(m0, 0), 1)"
    gate_queues = {
        q["metric"]["dimensions"]["queue"] for q in stuck["metricQueries"] if q["id"].startswith("g")
    }
    assert gate_queues == {"active", "backoff", "unschedulable"}


def _property_sources(run: StackRun, alarm_name: str, prop: str) -> set[tuple[str, str, str]]:
    [alarm] = [
        r for r in run.of_type("aws:cloudwatch/metricAlarm:MetricAlarm") if r.plain["name"] == alarm_name
    ]
    return {source for source in alarm.property_dependencies if source[0] == prop}


def test_alarm_thresholds_and_switches_come_from_the_stack() -> None:
    result = run(
        {
            "autoscaling": "none",
            "observability": {
                "enabled": True,
                "alarms": {
                    "gpuMemoryUtilization": {"threshold": 90, "minutes": 3},
                    "webhookErrors": {"enabled": False},
                },
            },
        }
    )
    alarms = {r.plain["name"]: r.plain for r in result.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")}
    assert "gpu-scheduler-test-webhookErrors" not in alarms
    memory = alarms["gpu-scheduler-test-gpuMemoryUtilization"]
    assert (memory["threshold"], memory["evaluationPeriods"]) == (90, 3)
    assert result.of_type("aws:sns/topic:Topic") == []
    assert memory.get("alarmActions", []) == []
    # No autoscaler, yet the agent's credentials need the Pod Identity agent.
    assert [r for r in result.of_type(ADDON) if r.plain["addonName"] == "eks-pod-identity-agent"]


@pytest.mark.parametrize(
    ("observability", "message"),
    [
        (
            {"enabled": True, "alarms": {"gpuUtilisation": {"threshold": 1}}},
            "gpu-scheduler-eks:observability.alarms: unknown key 'gpuUtilisation'; known keys: "
            + ", ".join(sorted(alarm_keys())),
        ),
        (
            {"enabled": True, "alarms": {"gpuMemoryUtilization": {"threshold": "95"}}},
            "gpu-scheduler-eks:observability.alarms.gpuMemoryUtilization.threshold: "
            "must be a number, not '95'",
        ),
        (
            {"enabled": True, "alarms": {"jobsTimingOut": {"minutes": 0}}},
            "gpu-scheduler-eks:observability.alarms.jobsTimingOut.minutes: must be 1..1440, not 0",
        ),
        (
            {"enabled": True, "addonVersion": "v2.6.0-eksbuild.1"},
            "gpu-scheduler-eks:observability.addonVersion: v2.6.0-eksbuild.1 does not offer EKS Pod Identity",
        ),
        (
            {"enabled": True, "addonVersion": "6.4.0"},
            "gpu-scheduler-eks:observability.addonVersion: '6.4.0' is not valid",
        ),
        ({"enabled": "yes"}, "gpu-scheduler-eks:observability.enabled: must be true or false, not 'yes'"),
    ],
)
def test_bad_observability_settings_name_the_key(observability: dict[str, Any], message: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config({"observability": observability})
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("offered", "message"),
    [
        (
            "v6.2.0-eksbuild.1",
            "v6.4.0-eksbuild.1 is not offered in us-west-2 for Kubernetes 1.35; the newest there is v6.2.0",
        ),
        ("", "us-west-2 offers no amazon-cloudwatch-observability add-on for Kubernetes 1.35"),
    ],
)
def test_a_region_that_does_not_offer_the_pinned_addon_fails_naming_the_key(
    offered: str, message: str
) -> None:
    with mock_aws():
        mocks = StackMocks()
        mocks.offered_addon_versions = {OBSERVABILITY_ADDON: offered}
        config = stack_config({"observability": {"enabled": True}})
        with pytest.raises(Exception, match=r"gpu-scheduler-eks:observability\.addonVersion: ") as raised:
            run_stack(lambda: build_stack(config), mocks)
    assert f"gpu-scheduler-eks:observability.addonVersion: {message}" in str(raised.value)
