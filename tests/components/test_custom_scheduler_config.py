"""The shared renderer: the plugin block the Go test loads, the extender stanza per mode, and the
scheduler's client rate (``scheduler.clientQps``) from the stack to the ConfigMap."""

from pathlib import Path

import pytest
import yaml

from components.custom_scheduler import CONFIG_FILE
from components.stack_config import PROJECT, StackConfigError
from contracts.cluster import SCHEDULER_NAME
from contracts.modes import SCHEDULER_MODES, SchedulerMode, node_cache_capable, uses_extender
from contracts.server import FILTER_PATH, PREEMPT_PATH, PRIORITIZE_PATH
from policy.setting_schema import CLIENT_QPS, CLIENT_QPS_SETTING
from render.scheduler_config import SchedulerConfig, render_scheduler_config
from tests.components.conftest import SINGLE_GROUP, run_with, stack_config

SHARED = Path(__file__).resolve().parents[1] / "vectors" / "plugin_mode_plugins.yaml"


def test_rendered_plugins_are_the_ones_the_go_test_loads() -> None:
    document = render_scheduler_config(SchedulerConfig(mode="plugin"))
    assert document["profiles"][0]["plugins"] == yaml.safe_load(SHARED.read_text())


def test_three_modes_two_with_an_extender_one_with_a_node_cache() -> None:
    assert SCHEDULER_MODES == ("extender", "extender-cached", "plugin")
    assert [uses_extender(mode) for mode in SCHEDULER_MODES] == [True, True, False]
    assert [node_cache_capable(mode) for mode in SCHEDULER_MODES] == [False, True, False]


def test_node_cache_capable_is_true_only_in_extender_cached_mode() -> None:
    [stateless] = render_scheduler_config(SchedulerConfig(mode="extender"))["extenders"]
    [cached] = render_scheduler_config(SchedulerConfig(mode="extender-cached"))["extenders"]
    assert stateless["nodeCacheCapable"] is False
    assert cached["nodeCacheCapable"] is True
    assert {**cached, "nodeCacheCapable": False} == stateless, "the rest of the stanza is the same"


@pytest.mark.parametrize("mode", ["extender", "extender-cached"])
def test_both_extender_modes_name_the_verbs_the_extender_serves(mode: SchedulerMode) -> None:
    [stanza] = render_scheduler_config(SchedulerConfig(mode=mode))["extenders"]
    verbs = {key: stanza[key] for key in ("filterVerb", "prioritizeVerb", "preemptVerb")}
    assert verbs == {"filterVerb": "filter", "prioritizeVerb": "prioritize", "preemptVerb": "preempt"}
    assert "bindVerb" not in stanza
    assert {f"/{verb}" for verb in verbs.values()} == {FILTER_PATH, PRIORITIZE_PATH, PREEMPT_PATH}


def test_the_extender_modes_differ_only_in_the_stanza() -> None:
    stateless = render_scheduler_config(SchedulerConfig(mode="extender"))
    cached = render_scheduler_config(SchedulerConfig(mode="extender-cached"))
    assert {**cached, "extenders": None} == {**stateless, "extenders": None}
    assert "plugins" not in cached["profiles"][0]


def test_an_unknown_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(ValueError, match=r"one of extender, extender-cached, plugin, not 'cached'"):
        SchedulerConfig(mode="cached")  # type: ignore[arg-type]


@pytest.mark.parametrize("percentage", [0, 101, -5])
def test_a_percentage_of_nodes_to_score_out_of_range_is_refused(percentage: int) -> None:
    with pytest.raises(ValueError, match=r"percentage_of_nodes_to_score must be 1\.\.100"):
        SchedulerConfig(mode="extender", percentage_of_nodes_to_score=percentage)


def test_client_qps_sets_qps_and_burst_beside_the_kubeconfig_and_is_absent_with_none() -> None:
    lifted = render_scheduler_config(SchedulerConfig(mode="plugin", kubeconfig="/k", client_qps=1000))
    assert lifted["clientConnection"] == {"kubeconfig": "/k", "qps": 1000, "burst": 1000}
    in_cluster = render_scheduler_config(SchedulerConfig(mode="extender", client_qps=200))
    assert in_cluster["clientConnection"] == {"qps": 200, "burst": 200}
    assert "clientConnection" not in render_scheduler_config(SchedulerConfig(mode="plugin", client_qps=None))


@pytest.mark.parametrize("qps", [0, -1, CLIENT_QPS_SETTING.high + 1])
def test_a_client_qps_out_of_range_is_refused(qps: int) -> None:
    with pytest.raises(ValueError, match=rf"client_qps must be 1\.\.{CLIENT_QPS_SETTING.high}"):
        SchedulerConfig(mode="plugin", client_qps=qps)


def test_the_default_is_the_stacks_rate_in_every_mode() -> None:
    for mode in SCHEDULER_MODES:
        connection = render_scheduler_config(SchedulerConfig(mode=mode))["clientConnection"]
        assert connection == {"qps": CLIENT_QPS, "burst": CLIENT_QPS}, mode
        assert CLIENT_QPS > 50, "above kube-scheduler's own 50/100, as the gang figures ask"


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
def test_the_stacks_client_qps_reaches_the_config_map_in_every_mode(mode: SchedulerMode) -> None:
    settings: dict[str, object] = {
        "schedulerMode": mode,
        "scheduler": {"clientQps": "250"},
        "gpuNodeGroups": [SINGLE_GROUP],
    }
    assert stack_config(settings).scheduler.client_qps == 250
    data = run_with(settings).kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"]
    assert yaml.safe_load(data[CONFIG_FILE])["clientConnection"] == {"qps": 250, "burst": 250}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (0, "must be 1..5000, not 0"),
        (5001, "must be 1..5000, not 5001"),
        ("fast", "must be an integer, not 'fast'"),
    ],
)
def test_a_bad_client_qps_fails_naming_the_key(value: object, problem: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config({"scheduler": {"clientQps": value}})
    assert str(raised.value) == f"{PROJECT}:scheduler.clientQps: {problem}"
