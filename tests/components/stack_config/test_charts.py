"""Each chart the stack installs is pinned in one place (components/stack_config/charts.py), and
what the chart tests render is that version: the example stacks install the pinned versions,
``toolchain/build.sh`` fetches the sources the pins name, and the published sources are those."""

import subprocess
import sys
from pathlib import Path

import pytest

from components.stack_config.charts import CHARTS, CLUSTER_AUTOSCALER, ChartPin
from testbed.charts import ChartSource
from tests.components.chart_cases import STACK_CASES, StackCase, declared_releases

REPO_ROOT = Path(__file__).resolve().parents[3]
RENDERED = [pin for pin in CHARTS if pin.source_module is not None]
CHART_VERSION_KEYS = {
    "karpenter": "karpenter.chartVersion",
    "karpenter-crd": "karpenter.chartVersion",
    "nvidia-device-plugin": "devicePlugin.chartVersion",
    "cluster-autoscaler": "clusterAutoscaler.chartVersion",
}
"""The stack config key that sets each chart's version."""


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda case: case.id)
def test_every_example_stack_installs_the_pinned_chart_versions(case: StackCase) -> None:
    """A stack that pins another version would install a chart no test rendered."""
    releases = declared_releases(case)
    assert releases, f"{case.id}: no Helm release"
    for release in releases:
        assert release.version == release.pin.version, (
            f"{case.stack_file.name}: {CHART_VERSION_KEYS[release.pin.name]} is {release.version}, but the "
            f"charts are tested at {release.pin.version} (components/stack_config/charts.py)"
        )


def test_every_chart_has_a_key_for_its_version() -> None:
    assert set(CHART_VERSION_KEYS) == {pin.name for pin in CHARTS}


def test_only_cluster_autoscaler_has_no_source_to_render() -> None:
    assert [pin for pin in CHARTS if pin.source_module is None] == [CLUSTER_AUTOSCALER]


@pytest.mark.parametrize("pin", RENDERED, ids=lambda pin: pin.name)
def test_the_build_fetches_the_module_the_pin_names(pin: ChartPin) -> None:
    """build.sh asks charts.py (with the system Python, as it runs it) for each chart's source."""
    printed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "components" / "stack_config" / "charts.py"), pin.name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert printed == [f"{pin.source_module}@v{pin.version}", pin.source_path]


def test_the_build_states_no_chart_version_of_its_own() -> None:
    script = (REPO_ROOT / "toolchain" / "build.sh").read_text()
    for pin in RENDERED:
        assert f"{pin.source_module}@" not in script, f"build.sh pins {pin.source_module} itself"


def test_an_unknown_chart_is_refused_naming_the_known_ones() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "components" / "stack_config" / "charts.py"), "karpenterr"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "no chart 'karpenterr': one of karpenter, karpenter-crd" in done.stderr


@pytest.mark.parametrize("pin", RENDERED, ids=lambda pin: pin.name)
def test_the_published_source_is_the_pinned_one(pin: ChartPin, bin_dir: Path) -> None:
    """A pin moved without `make charts` (or `make test`) leaves the old source: named here."""
    source = ChartSource.published(bin_dir, pin)
    assert source.origin == f"{pin.module} {pin.source_path}", (
        f"{source.directory} is from {source.origin}, the pin is {pin.module}: run `make charts`"
    )
    chart = source.chart_yaml()
    assert chart["name"] == pin.name
    if pin.release_rewrites_version:
        assert chart["version"] != pin.version, (
            f"{pin.name}: Chart.yaml states the pin; drop release_rewrites_version"
        )
    else:
        assert chart["version"] == pin.version


@pytest.mark.parametrize("pin", CHARTS, ids=lambda pin: pin.name)
def test_the_dependencies_page_lists_every_chart(pin: ChartPin) -> None:
    page = (REPO_ROOT / "docs" / "dependencies.md").read_text()
    [row] = [line for line in page.splitlines() if line.startswith(f"| `{pin.name}` |")]
    assert f"| {pin.version} |" in row
    assert (pin.source_module or "no served module") in row
