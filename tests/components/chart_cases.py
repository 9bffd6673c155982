"""The Helm releases each example stack declares, as the program declares them under the mocks.

One case per example stack file (``Pulumi.*.yaml``) and autoscaler: a stack on EKS once with
each autoscaler (``autoscaling`` switched, the other autoscaler's section dropped, and a GPU
group's ``perZone`` turned into ``karpenter.perZone``, as its owner would write it for Karpenter),
a stack on an existing cluster as written but with the device plugin on (the local example turns
it off only because its cluster has no GPU node). The chart values are what the program passes
its ``helm.v3.Release`` resources: the components build them with their values functions
(``karpenter_values``, ``device_plugin_values``, ``autoscaler_values``), and the tests take them
from the run, never from a copy.
"""

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.stack_config.charts import CHARTS, ChartPin
from contracts.modes import AUTOSCALERS, Autoscaler
from tests.components.conftest import EXAMPLE_STACKS, example_stack_name, example_stack_values, run_with
from tests.components.mocks import StackRun, manifest

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class StackCase:
    """An example stack file with one autoscaler (None: a stack on an existing cluster)."""

    stack_file: Path
    autoscaler: Autoscaler | None

    @property
    def id(self) -> str:
        return "-".join(part for part in (example_stack_name(self.stack_file), self.autoscaler) if part)

    def values(self) -> tuple[dict[str, str], frozenset[str]]:
        """The stack's values, as Pulumi passes them, for this case."""
        values, secret_keys = example_stack_values(self.stack_file)
        if self.autoscaler is None:
            device_plugin = json.loads(values.get("devicePlugin", "{}"))
            values["devicePlugin"] = json.dumps({**device_plugin, "enabled": True})
            return values, secret_keys
        values["autoscaling"] = self.autoscaler
        sections = {"karpenter": "karpenter", "cluster-autoscaler": "clusterAutoscaler"}
        for autoscaler, section in sections.items():
            if autoscaler != self.autoscaler:
                values.pop(section, None)
        if self.autoscaler == "karpenter":
            groups = json.loads(values.get("gpuNodeGroups", "[]"))
            if [group.pop("perZone") for group in groups if "perZone" in group]:
                values["karpenter"] = json.dumps(
                    {**json.loads(values.get("karpenter", "{}")), "perZone": True}
                )
                values["gpuNodeGroups"] = json.dumps(groups)
        return values, secret_keys


def stack_cases() -> list[StackCase]:
    """Every example stack: on EKS with each autoscaler that adds nodes, on an existing cluster once."""
    cases = []
    for stack_file in EXAMPLE_STACKS:
        values, _ = example_stack_values(stack_file)
        if "existingCluster" in values:
            cases.append(StackCase(stack_file, None))
        else:
            cases.extend(
                StackCase(stack_file, autoscaler) for autoscaler in AUTOSCALERS if autoscaler != "none"
            )
    return cases


STACK_CASES = stack_cases()


@dataclass(frozen=True)
class DeclaredRelease:
    """One ``helm.v3.Release`` the program declared."""

    resource: str
    """Its Pulumi name."""
    pin: ChartPin
    name: str
    namespace: str
    version: str
    values: dict[str, Any]
    skip_crds: bool


def pin_of(release: dict[str, Any]) -> ChartPin:
    """The pin of the chart a release installs, by its chart reference and repository."""
    repository = release.get("repositoryOpts", {}).get("repo")
    for pin in CHARTS:
        if release["chart"] in (f"{pin.repository}/{pin.name}", pin.name) and repository in (
            None,
            pin.repository,
        ):
            return pin
    raise AssertionError(
        f"chart {release['chart']} (repository {repository}) has no pin in components/stack_config/charts.py"
    )


@functools.cache
def declared_releases(case: StackCase) -> tuple[DeclaredRelease, ...]:
    """The case's Helm releases, from one run of the program per case and session."""
    values, secret_keys = case.values()
    run: StackRun = run_with(values, secret_keys)
    releases = []
    for declared in run.of_type(RELEASE_TYPE):
        plain = manifest(declared.plain)
        releases.append(
            DeclaredRelease(
                resource=declared.name,
                pin=pin_of(plain),
                name=plain["name"],
                namespace=plain["namespace"],
                version=plain["version"],
                values=plain.get("values") or {},
                skip_crds=bool(plain.get("skipCrds", False)),
            )
        )
    return tuple(releases)
