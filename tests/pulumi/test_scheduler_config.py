"""The plugin-mode plugins block is shared with the Go test that loads it into kube-scheduler."""

from pathlib import Path

import yaml

from components.scheduler_config import SchedulerConfig, render_scheduler_config

SHARED = Path(__file__).resolve().parents[1] / "vectors" / "plugin_mode_plugins.yaml"


def test_rendered_plugins_are_the_ones_the_go_test_loads() -> None:
    document = render_scheduler_config(SchedulerConfig(mode="plugin"))
    assert document["profiles"][0]["plugins"] == yaml.safe_load(SHARED.read_text())
