"""Every values key the stack sets is one its chart has and renders.

Helm ignores a values key the chart does not read, silently: a key the chart renamed, or one a
typo made, would pass every other test and do nothing on a real cluster. For each example stack
and autoscaler (tests/components/chart_cases.py), each release's values, as the program passes them,
are checked against the chart's source at the pinned version (``make charts``): each key must be
in the chart's values.yaml (or its values schema, where it has one), and changing its value must
change what ``helm template`` renders. Cluster Autoscaler's chart is in no module the Go module
proxy serves: its keys are checked against a list of its values keys at the pinned version
(fixtures/), and it is not rendered (docs/dependencies.md#helm-charts).
"""

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubernetes_versions import plugin_kubernetes_version
from components.stack_config.charts import CLUSTER_AUTOSCALER, KARPENTER, NVIDIA_DEVICE_PLUGIN, ChartPin
from testbed.charts import ChartSource, RenderWith, ignored_paths, unknown_paths, value_paths
from tests.components.chart_cases import STACK_CASES, DeclaredRelease, StackCase, declared_releases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLUSTER_AUTOSCALER_KEYS = FIXTURES / f"cluster-autoscaler-{CLUSTER_AUTOSCALER.version}-values-keys.yaml"


def check_known(
    values: dict[str, Any], pin: ChartPin, defaults: dict[str, Any], schema: Any, source: str
) -> None:
    """Fail naming each values key the chart does not have."""
    unknown = unknown_paths(values, defaults, schema)
    assert not unknown, f"{pin.name} {pin.version} ({source}) has no values key {', '.join(unknown)}"


def check_rendered(values: dict[str, Any], release: DeclaredRelease, render_with: RenderWith) -> None:
    """Fail naming each values key whose change leaves the rendered objects as they were."""
    ignored = list(ignored_paths(values, render_with))
    assert not ignored, (
        f"{release.pin.name} {release.pin.version} renders the same whatever {', '.join(ignored)} "
        "is: the chart ignores it here"
    )


def renderer(helm_dir: Path, release: DeclaredRelease) -> RenderWith:
    return RenderWith(
        helm_dir / "helm",
        ChartSource.published(helm_dir, release.pin).directory,
        release=release.name,
        namespace=release.namespace,
        kube_version=plugin_kubernetes_version(),
    )


def rendered_releases(case: StackCase) -> list[DeclaredRelease]:
    return [release for release in declared_releases(case) if release.pin.source_module is not None]


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda case: case.id)
def test_every_values_key_is_a_key_of_the_pinned_chart(case: StackCase, bin_dir: Path) -> None:
    releases = rendered_releases(case)
    assert NVIDIA_DEVICE_PLUGIN in {release.pin for release in releases}
    for release in releases:
        source = ChartSource.published(bin_dir, release.pin)
        check_known(release.values, release.pin, source.default_values(), source.schema(), source.origin)


@pytest.mark.parametrize("case", STACK_CASES, ids=lambda case: case.id)
def test_every_values_key_changes_what_the_chart_renders(case: StackCase, bin_dir: Path) -> None:
    for release in rendered_releases(case):
        check_rendered(release.values, release, renderer(bin_dir, release))


def karpenter_release() -> DeclaredRelease:
    [case] = [case for case in STACK_CASES if case.autoscaler == "karpenter"][:1]
    [release] = [release for release in declared_releases(case) if release.pin == KARPENTER]
    return release


def test_an_unknown_key_fails_naming_it(bin_dir: Path) -> None:
    release = karpenter_release()
    assert "settings.interruptionQueue" in value_paths(release.values)
    source = ChartSource.published(bin_dir, KARPENTER)
    misspelt = {**release.values, "settings": {**release.values["settings"], "interuptionQueue": "q"}}
    with pytest.raises(AssertionError, match=r"(?m)has no values key settings\.interuptionQueue$"):
        check_known(misspelt, KARPENTER, source.default_values(), source.schema(), source.origin)


def test_an_ignored_key_fails_naming_it(bin_dir: Path) -> None:
    """The device plugin's chart has ``gfd.nameOverride``, but with GPU feature discovery off (as
    the stack has it) nothing renders it."""
    [release] = [r for r in declared_releases(STACK_CASES[0]) if r.pin == NVIDIA_DEVICE_PLUGIN]
    assert release.values["gfd"] == {"enabled": False}
    values = {**release.values, "gfd": {"enabled": False, "nameOverride": "gfd"}}
    source = ChartSource.published(bin_dir, NVIDIA_DEVICE_PLUGIN)
    check_known(values, NVIDIA_DEVICE_PLUGIN, source.default_values(), source.schema(), source.origin)
    with pytest.raises(AssertionError, match=r"whatever gfd\.nameOverride is"):
        check_rendered(values, release, renderer(bin_dir, release))


@pytest.mark.parametrize(
    "case",
    [case for case in STACK_CASES if case.autoscaler == "cluster-autoscaler"],
    ids=lambda case: case.id,
)
def test_every_cluster_autoscaler_values_key_is_a_documented_key(case: StackCase) -> None:
    [release] = [release for release in declared_releases(case) if release.pin == CLUSTER_AUTOSCALER]
    assert CLUSTER_AUTOSCALER_KEYS.is_file(), (
        f"no list of the values keys of cluster-autoscaler {CLUSTER_AUTOSCALER.version}: make "
        f"{CLUSTER_AUTOSCALER_KEYS.name} from that chart's values.yaml (docs/dependencies.md#helm-charts)"
    )
    keys = yaml.safe_load(CLUSTER_AUTOSCALER_KEYS.read_text())
    assert "extraArgs" in value_paths(release.values)
    check_known(release.values, CLUSTER_AUTOSCALER, keys, None, CLUSTER_AUTOSCALER_KEYS.name)


def test_a_key_cluster_autoscaler_does_not_document_fails_naming_it() -> None:
    keys = yaml.safe_load(CLUSTER_AUTOSCALER_KEYS.read_text())
    values = {
        "autoDiscovery": {"clusterName": "c"},
        "rbac": {"serviceAccount": {"nmae": "cluster-autoscaler"}},
    }
    with pytest.raises(AssertionError, match=r"(?m)has no values key rbac\.serviceAccount\.nmae$"):
        check_known(values, CLUSTER_AUTOSCALER, keys, None, CLUSTER_AUTOSCALER_KEYS.name)
