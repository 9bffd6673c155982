"""One configuration, two runners: the agent configuration the stack renders, translated for the
local OpenTelemetry Collector as the CloudWatch agent v1.300070.0 translates it for itself
(translator/translate/otel/exporter/awsemf/prometheus.go and awsemf_default_prometheus.yaml):
rule by rule, the namespace, the log group; a rule the agent skips is skipped, a key it refuses
fails before the collector starts."""

import copy
from typing import Any

import pytest

from localcluster.services.cloudwatch_pipeline import LOCAL_SCRAPE_INTERVAL, local_scrape_config
from render.agent_translation import NOTHING_MATCHES, collector_config_from_agent
from render.cloudwatch_agent_facts import AgentConfigError
from render.emf_rules import (
    SCHEDULER_JOB,
    SERVICES_JOB,
    agent_config,
    agent_scrape_config,
    keep_rule,
    metric_declarations,
)

ENDPOINT = "http://127.0.0.1:1"


def translated(config: dict[str, Any]) -> dict[str, Any]:
    exporter: dict[str, Any] = collector_config_from_agent(
        config, {"scrape_configs": []}, logs_endpoint=ENDPOINT
    )["exporters"]["awsemf"]
    return exporter


def rules_of(config: dict[str, Any]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"][
        "metric_declaration"
    ]
    return rules


def test_the_stacks_agent_configuration_becomes_the_exporter_the_agent_runs() -> None:
    exporter = translated(agent_config("lab", "us-west-2"))
    assert exporter["namespace"] == "GPUScheduler"
    assert exporter["log_group_name"] == "/aws/containerinsights/lab/prometheus"
    assert exporter["region"] == "us-west-2"
    assert (exporter["endpoint"], exporter["local_mode"]) == (ENDPOINT, True)
    assert exporter["version"] == "0", "the agent writes EMF version 0 for Prometheus"
    assert exporter["log_stream_name"] == "{JobName}"
    assert exporter["dimension_rollup_option"] == "NoDimensionRollup"
    rules = metric_declarations("lab")
    assert exporter["metric_declarations"] == [
        {
            "metric_name_selectors": rule["metric_selectors"],
            "label_matchers": [{"label_names": ["ClusterName"], "regex": "^lab$"}],
            "dimensions": rule["dimensions"],
        }
        for rule in rules
    ]


def test_a_rule_the_agent_skips_is_skipped_and_its_defaults_are_the_agents() -> None:
    config = agent_config("lab", "us-west-2")
    first, second, third, *_ = rules_of(config)
    del first["source_labels"]
    del second["metric_selectors"]
    del third["label_matcher"]
    third["label_separator"] = "|"
    declarations = translated(config)["metric_declarations"]
    assert len(declarations) == len(rules_of(config)) - 2
    assert first["metric_selectors"] not in [d["metric_name_selectors"] for d in declarations]
    [kept] = [d for d in declarations if d["metric_name_selectors"] == third["metric_selectors"]]
    assert kept["label_matchers"] == [{"label_names": ["ClusterName"], "regex": ".*"}], (
        "label_matcher defaults to .*, label_separator is not passed on"
    )


def test_with_no_rule_left_nothing_becomes_a_metric() -> None:
    config = agent_config("lab", "us-west-2")
    for rule in rules_of(config):
        del rule["source_labels"]
    assert translated(config)["metric_declarations"] == [{"metric_name_selectors": [NOTHING_MATCHES]}]


def test_the_agents_defaults_for_namespace_and_log_group() -> None:
    config = agent_config("lab", "us-west-2")
    prometheus = config["logs"]["metrics_collected"]["prometheus"]
    del prometheus["log_group_name"]
    del prometheus["emf_processor"]["metric_namespace"]
    exporter = translated(config)
    assert exporter["namespace"] == "ContainerInsights/Prometheus"
    assert exporter["log_group_name"] == "/aws/containerinsights/lab/prometheus"


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("rule", "metric_name_selectors"),
        ("emf_processor", "metric_declarations"),
        ("prometheus", "scrape_interval"),
    ],
)
def test_a_key_the_agent_refuses_fails_the_local_run(where: str, key: str) -> None:
    config = agent_config("lab", "us-west-2")
    prometheus = config["logs"]["metrics_collected"]["prometheus"]
    section = {
        "rule": rules_of(config)[0],
        "emf_processor": prometheus["emf_processor"],
        "prometheus": prometheus,
    }
    section[where][key] = copy.deepcopy(section[where].get("metric_selectors", ["x"]))
    with pytest.raises(AgentConfigError, match=rf"refuses its configuration .*\.{key}"):
        collector_config_from_agent(config, {"scrape_configs": []}, logs_endpoint=ENDPOINT)


def test_the_local_scrape_is_the_rendered_one_with_local_targets() -> None:
    rendered = agent_scrape_config("lab")
    tls = {"cert_file": "/c", "key_file": "/k", "insecure_skip_verify": True}
    local = local_scrape_config(
        rendered, {SERVICES_JOB: ["127.0.0.1:1"], SCHEDULER_JOB: ["127.0.0.1:2"]}, tls
    )
    assert local["global"]["scrape_interval"] == LOCAL_SCRAPE_INTERVAL
    by_name = {job["job_name"]: job for job in local["scrape_configs"]}
    for job in rendered["scrape_configs"]:
        ours = by_name[job["job_name"]]
        assert "kubernetes_sd_configs" not in ours
        assert ours["metric_relabel_configs"] == job["metric_relabel_configs"] == [keep_rule()]
        assert {"target_label": "ClusterName", "replacement": "lab"} in ours["relabel_configs"]
        assert all("__meta_kubernetes" not in str(rule) for rule in ours["relabel_configs"])
    assert by_name[SCHEDULER_JOB]["tls_config"] == tls
    assert "authorization" not in by_name[SCHEDULER_JOB]
    assert by_name[SCHEDULER_JOB]["scheme"] == "https"
    without_scheduler = local_scrape_config(rendered, {SERVICES_JOB: ["127.0.0.1:1"]}, tls)
    assert [job["job_name"] for job in without_scheduler["scrape_configs"]] == [SERVICES_JOB]
