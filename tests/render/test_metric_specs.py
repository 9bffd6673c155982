"""Every metric the dashboard and the alarms read is one the system emits, under that exact name
and with those dimensions: the specs held against the real extender's and webhook's ``/metrics``
(here, in-process, over real TLS) and against kube-scheduler's and gpu-scheduler's
(tests/e2e/test_metric_specs.py). A renamed metric or label fails here, not on the dashboard."""

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from components.observability import check_dashboard_searches
from components.stack_config import StackConfigError
from contracts.server import ROLE_WEBHOOK
from extender_app.cli import settings_from
from render.cloudwatch_alarms import alarm_definitions
from render.cloudwatch_dashboard import dashboard_body, drawn_metrics
from render.emf_rules import keep_rule, metric_declarations
from render.metric_queries import (
    SEARCH_EXPRESSION_LIMIT,
    MetricQueryError,
    check_insights_query,
    search_expression,
)
from render.metric_specs import (
    GPU_SCHEDULER_NAMESPACE,
    METRIC_SPECS,
    Alarm,
    MetricSpecError,
    check_specs,
    spec_by_key,
)
from testbed.admission_reviews import admission_review, gpu_pod
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import ThreadedExtender, client_context, request, scheduler_context, settings_for
from testbed.metric_exposition import emitted, scrape, spec_problems
from testbed.pki import Pki, make_pki

EXTENDER_SPECS = [spec for spec in METRIC_SPECS if spec.name.startswith("gpu_extender_")]


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


@pytest.fixture
def servers(pki: Pki) -> Iterator[tuple[ThreadedExtender, ThreadedExtender]]:
    """The extender role and the webhook role, as their Deployments run them."""
    extender = ThreadedExtender(settings_for(pki), pki).start()
    webhook_defaults = settings_from(["--role", "webhook"], {})
    webhook_settings = replace(
        settings_for(pki, role=ROLE_WEBHOOK),
        client_ca=webhook_defaults.client_ca,
        max_body_bytes=webhook_defaults.max_body_bytes,
    )
    webhook = ThreadedExtender(webhook_settings, pki).start()
    yield extender, webhook
    extender.stop()
    webhook.stop()


def exercised_pages(extender: ThreadedExtender, webhook: ThreadedExtender) -> str:
    """Both pages after the traffic a cluster gives them: verbs answered and one refused each."""
    nodes = make_nodes(4)
    bodies = {
        "/filter": extender_body(make_pod(), nodes),
        "/prioritize": extender_body(make_pod(), nodes),
        "/preempt": orjson.dumps({"Pod": make_pod(), "NodeNameToVictims": {}}),
    }
    for path, body in bodies.items():
        ok = request(extender.ports.port, scheduler_context(extender.pki), path, body)
        assert ok.status == 200
        refused = request(extender.ports.port, scheduler_context(extender.pki), path, b"{not json")
        assert refused.status == 400
    assert (
        request(
            webhook.ports.port, client_context(webhook.pki), "/mutate", admission_review(gpu_pod())
        ).status
        == 200
    )
    assert request(webhook.ports.port, client_context(webhook.pki), "/mutate", b"[]").status == 400
    return scrape("127.0.0.1", extender.ports.health_port) + scrape("127.0.0.1", webhook.ports.health_port)


def test_the_extender_and_webhook_emit_every_metric_their_specs_name(servers) -> None:
    assert {spec.key for spec in EXTENDER_SPECS} == {"extenderLatency", "extenderErrors", "webhookErrors"}
    page = emitted(exercised_pages(*servers))
    assert spec_problems(EXTENDER_SPECS, page) == []
    # The errors the alarms count are there, under the label values the queries exclude.
    assert page["gpu_extender_requests_total"].labels["status"] >= {"200", "400"}


def test_the_scrape_keeps_only_the_samples_of_the_metrics_the_specs_name(servers) -> None:
    """The keep rule (metric_relabel_configs, Prometheus anchors its regex) against the real
    extender's and webhook's pages: every spec metric they serve is kept, nothing else is."""
    rule = keep_rule()
    assert (rule["source_labels"], rule["action"]) == (["__name__"], "keep")
    pattern = re.compile(rule["regex"])
    text = exercised_pages(*servers)
    samples = {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}
    kept = {name for name in samples if pattern.fullmatch(name)}
    spec_names = {spec.name for spec in EXTENDER_SPECS}
    assert {
        name.removesuffix(suffix)
        for name in kept
        for suffix in ("_bucket", "_sum", "_count", "")
        if name.removesuffix(suffix) in spec_names
    } == spec_names
    histogram = "gpu_extender_request_duration_seconds"
    assert {f"{histogram}_bucket", f"{histogram}_sum", f"{histogram}_count"} <= kept
    dropped = samples - kept
    assert "gpu_extender_candidate_nodes_total" in dropped, "a metric no spec names is dropped at scrape time"
    assert "gpu_extender_requests_created" in dropped, "so are the client's _created samples"
    for name in kept:
        assert any(name == spec or name.startswith(f"{spec}_") for spec in spec_names), name


def test_a_renamed_metric_or_label_is_caught(servers) -> None:
    page = emitted(exercised_pages(*servers))
    latency = spec_by_key("extenderLatency")
    renamed = replace(latency, name="gpu_extender_latency_seconds")
    relabelled = replace(spec_by_key("extenderErrors"), dimensions=("ClusterName", "verb", "code"))
    reselected = replace(spec_by_key("webhookErrors"), select=(("verb", ("admit",)),))
    problems = spec_problems([renamed, relabelled, reselected], page)
    assert len(problems) == 3
    assert "no metric 'gpu_extender_latency_seconds'" in problems[0]
    assert "no label 'code'" in problems[1]
    assert "verb='admit'" in problems[2]


def test_the_dashboard_draws_only_spec_metrics_and_emf_keeps_each_of_ours() -> None:
    body = dashboard_body("lab", "us-west-2", {"t4": ["g4dn.xlarge"]})
    specs = {(spec.namespace, spec.name, spec.dimensions) for spec in METRIC_SPECS}
    assert {(m.namespace, m.name, m.dimensions) for m in drawn_metrics(body)} == specs
    kept = {
        (rule["metric_selectors"][0].strip("^$"), tuple(dimensions))
        for rule in metric_declarations("lab")
        for dimensions in rule["dimensions"]
    }
    ours = {
        (spec.name, spec.dimensions) for spec in METRIC_SPECS if spec.namespace == GPU_SCHEDULER_NAMESPACE
    }
    assert kept == ours


@pytest.mark.parametrize(
    ("key", "changes", "message"),
    [
        ("gpuUtilization", {"statistic": "p99"}, "metric spec 'gpuUtilization': statistic must be one of"),
        ("podsPending", {"namespace": "Custom"}, "metric spec 'podsPending': unknown namespace 'Custom'"),
        ("podsRefused", {"split": "reason"}, "metric spec 'podsRefused': split 'reason' is not one of"),
        (
            "extenderErrors",
            {"select": (("code", ("500",)),)},
            "metric spec 'extenderErrors': 'code' is not one",
        ),
        (
            "gpuMemoryUtilization",
            {"alarm": Alarm(threshold="95", comparison=">", minutes=5, meaning="")},  # type: ignore[arg-type]
            "metric spec 'gpuMemoryUtilization': alarm threshold must be a number, not '95'",
        ),
        (
            "podsScheduled",
            {"alarm": Alarm(threshold=0, comparison="<=", minutes=5, meaning="", gate="podsQueued")},
            "metric spec 'podsScheduled': alarm gate 'podsQueued' is not a metric spec",
        ),
        (
            "podsScheduled",
            {"alarm": Alarm(threshold=0, comparison="<=", minutes=5, meaning="", gate="podsRefused")},
            "metric spec 'podsScheduled': a gated alarm adds up single series, so 'podsRefused' must fix",
        ),
        (
            "extenderLatency",
            {"select": (("verb", ("filter", "prioritize")),), "split": ""},
            "metric spec 'extenderLatency': keeping several values of verb adds up one query per value, "
            "which metric math can do for Sum, Maximum, Minimum, not Average",
        ),
        (
            "extenderErrors",
            {"split": "status"},
            "metric spec 'extenderErrors': split by 'status' while keeping several values of verb",
        ),
    ],
)
def test_a_bad_spec_is_refused_naming_its_key(key: str, changes: dict[str, Any], message: str) -> None:
    target = spec_by_key(key)
    specs = [dataclasses.replace(spec, **changes) if spec is target else spec for spec in METRIC_SPECS]
    with pytest.raises(MetricSpecError) as raised:
        check_specs(specs)
    assert str(raised.value).startswith(message)


def rendered_queries() -> list[str]:
    """Every Metrics Insights query and search the dashboard and the alarms send CloudWatch."""
    body = json.loads(
        dashboard_body("lab", "us-west-2", {"t4": ["g4dn.xlarge"], "mixed": ["g5.xlarge", "g6.xlarge"]})
    )
    expressions = [
        line["expression"] for widget in body["widgets"] for [line] in widget["properties"]["metrics"]
    ]
    for definition in alarm_definitions("lab", {}):
        expressions += [
            query["expression"] for query in definition.arguments["metric_queries"] if "expression" in query
        ]
    return expressions


def test_no_metrics_insights_query_uses_or_and_each_is_in_the_language() -> None:
    """The query language reference lists =, != and AND for WHERE; a SEARCH() takes OR."""
    queries = [expression for expression in rendered_queries() if expression.startswith("SELECT ")]
    assert len(queries) >= 10
    for query in queries:
        assert " OR " not in query, query
        assert check_insights_query(query, "test") == query
    errors = next(d for d in alarm_definitions("lab", {}) if d.key == "extenderErrors").arguments
    verbs = [q["expression"].split("verb = ")[1].split(" ")[0] for q in errors["metric_queries"][:-1]]
    assert verbs == ["'filter'", "'prioritize'", "'preempt'"]
    assert errors["metric_queries"][-1]["expression"] == "FILL(q0, 0) + FILL(q1, 0) + FILL(q2, 0)"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT SUM(x) FROM SCHEMA(\"GPUScheduler\", ClusterName, verb) WHERE ClusterName = 'a' AND "
        "(verb = 'filter' OR verb = 'prioritize')",
        "SELECT SUM(x) FROM SCHEMA(\"GPUScheduler\", ClusterName, verb) WHERE verb IN ('filter')",
        "SELECT SUM(x) FROM SCHEMA(\"GPUScheduler\", ClusterName) WHERE ClusterName LIKE 'a%'",
    ],
)
def test_a_query_the_language_does_not_define_is_refused(query: str) -> None:
    with pytest.raises(
        MetricQueryError, match=r"^metric spec 'x': not a Metrics Insights query CloudWatch accepts"
    ):
        check_insights_query(query, "metric spec 'x'")


def test_a_search_over_the_limit_is_refused_naming_its_node_group() -> None:
    types = [f"g{generation}.{size}xlarge" for generation in range(4, 9) for size in range(2, 10)]
    spec = spec_by_key("gpuUtilization")
    assert len(search_expression(spec, "lab", types[:5], 60, "small")) <= SEARCH_EXPRESSION_LIMIT
    with pytest.raises(
        MetricQueryError, match=r"^node group 'wide': the dashboard's SEARCH\(\) over its 40 "
    ):
        search_expression(spec, "lab", types, 60, "wide")
    with pytest.raises(StackConfigError, match=r"^gpu-scheduler-eks:gpuNodeGroups: node group 'wide': "):
        check_dashboard_searches("lab", {"small": types[:5], "wide": types})


def test_an_unknown_spec_key_lists_the_known_ones() -> None:
    with pytest.raises(
        MetricSpecError, match=r"^unknown metric spec 'gpuTemperature'; known: gpuUtilization, "
    ):
        spec_by_key("gpuTemperature")
