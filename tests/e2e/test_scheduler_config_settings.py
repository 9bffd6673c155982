"""The real kube-scheduler (and gpu-scheduler) accept the stack's httpTimeout and per-profile
percentageOfNodesToScore as rendered, and refuse a percentage out of range: the binaries decode
the configuration strictly and write back what they loaded (``--write-config-to``, then exit)."""

import subprocess
from pathlib import Path

import pytest
import yaml

from contracts.modes import SchedulerMode, uses_extender
from render.scheduler_config import ExtenderEndpoint, SchedulerConfig, scheduler_config_yaml
from testbed.pki import make_pki

UNREACHABLE_API = "https://127.0.0.1:1"
"""--write-config-to exits before the scheduler talks to the API server."""


def _kubeconfig(directory: Path) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": UNREACHABLE_API}}],
                "users": [{"name": "u", "user": {"token": "unused"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def _load(
    bin_dir: Path, tmp_path: Path, mode: SchedulerMode, percentage: int
) -> subprocess.CompletedProcess[str]:
    pki = make_pki(tmp_path)
    endpoint = ExtenderEndpoint(
        ca_file=str(pki.ca_file),
        cert_file=str(pki.client_cert),
        key_file=str(pki.client_key),
        http_timeout="5s",
    )
    config = SchedulerConfig(
        mode=mode,
        extender=endpoint,
        kubeconfig=str(_kubeconfig(tmp_path)),
        percentage_of_nodes_to_score=min(percentage, 100),
    )
    text = scheduler_config_yaml(config)
    if percentage > 100:  # past the renderer's own check, to see the binary's
        text = text.replace("percentageOfNodesToScore: 100", f"percentageOfNodesToScore: {percentage}")
    (tmp_path / "config.yaml").write_text(text)
    binary = bin_dir / ("kube-scheduler" if uses_extender(mode) else "gpu-scheduler")
    return subprocess.run(
        [
            str(binary),
            f"--config={tmp_path / 'config.yaml'}",
            f"--write-config-to={tmp_path / 'loaded.yaml'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("mode", ["extender", "plugin"])
def test_the_scheduler_loads_the_rendered_settings(
    bin_dir: Path, tmp_path: Path, mode: SchedulerMode
) -> None:
    done = _load(bin_dir, tmp_path, mode, 100)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = yaml.safe_load((tmp_path / "loaded.yaml").read_text())
    assert loaded["profiles"][0]["percentageOfNodesToScore"] == 100
    if uses_extender(mode):
        assert loaded["extenders"][0]["httpTimeout"] == "5s"


def test_the_scheduler_refuses_a_percentage_out_of_range(bin_dir: Path, tmp_path: Path) -> None:
    done = _load(bin_dir, tmp_path, "plugin", 101)
    assert done.returncode != 0
    assert "percentageOfNodesToScore: Invalid value: 101" in done.stderr
