"""The Helm charts the stack installs: each one's pinned version, where it is installed from, and
the Go module whose zip holds the same chart's source (what the chart tests render).

The one place a chart version is stated: the stack's defaults read ``version`` from here, and
``toolchain/build.sh charts`` fetches the sources this file names (run as a script, it prints a
chart's ``module@version``), so the version installed and the version tested cannot drift apart.
docs/dependencies.md#helm-charts says how a bump is checked.

Stdlib only: build.sh runs this file with the system Python, before any venv exists.
"""

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class ChartPin:
    """One chart: its name, the version the stack installs, its repository, and its source."""

    name: str
    version: str
    repository: str
    """A Helm repository URL, or an OCI registry (``oci://...``) the chart is pulled from."""
    source_module: str | None
    """The Go module whose zip at ``module_version`` holds the chart; None: in no module the Go
    module proxy serves (the chart cannot be rendered locally)."""
    source_path: str = ""
    """The chart's folder inside the module."""
    release_rewrites_version: bool = False
    """The project's release pipeline writes ``version`` into Chart.yaml when it publishes the
    chart, so the source at the tag states another (the one before)."""

    @property
    def module_version(self) -> str:
        """The module's tag for this chart version (``v`` + version: the projects tag their
        releases so, and release the chart at the same version)."""
        return f"v{self.version}"

    @property
    def module(self) -> str:
        """``module@version``, what ``go mod download`` takes."""
        if self.source_module is None:
            raise ValueError(f"the {self.name} chart has no source module")
        return f"{self.source_module}@{self.module_version}"


KARPENTER = ChartPin(
    name="karpenter",
    version="1.14.1",
    repository="oci://public.ecr.aws/karpenter",
    source_module="github.com/aws/karpenter-provider-aws",
    source_path="charts/karpenter",
    release_rewrites_version=True,
)
"""Karpenter's controller (AWS provider). Its Chart.yaml at the tag states an older version: the
release pipeline rewrites the version and the image before it publishes the chart."""
KARPENTER_CRD = ChartPin(
    name="karpenter-crd",
    version=KARPENTER.version,
    repository=KARPENTER.repository,
    source_module=KARPENTER.source_module,
    source_path="charts/karpenter-crd",
    release_rewrites_version=True,
)
"""Karpenter's CRDs as a chart of their own, always at the controller's version."""
NVIDIA_DEVICE_PLUGIN = ChartPin(
    name="nvidia-device-plugin",
    version="0.17.4",
    repository="https://nvidia.github.io/k8s-device-plugin",
    source_module="github.com/NVIDIA/k8s-device-plugin",
    source_path="deployments/helm/nvidia-device-plugin",
)
CLUSTER_AUTOSCALER = ChartPin(
    name="cluster-autoscaler",
    version="9.59.0",
    repository="https://kubernetes.github.io/autoscaler",
    source_module=None,
)
"""kubernetes/autoscaler's chart (appVersion 1.35.0). The repository's Go module
(``k8s.io/autoscaler/cluster-autoscaler``) holds the program, not ``charts/``; no module the proxy
serves holds the chart, so only its values keys are checked, against a fixture
(tests/components/fixtures/cluster-autoscaler-9.59.0-values-keys.yaml)."""
CHARTS = (KARPENTER, KARPENTER_CRD, NVIDIA_DEVICE_PLUGIN, CLUSTER_AUTOSCALER)
"""Every chart the stack installs."""


def chart(name: str) -> ChartPin:
    """The pin of chart ``name``; an unknown name fails, naming the known ones."""
    for pin in CHARTS:
        if pin.name == name:
            return pin
    raise ValueError(f"no chart {name!r}: one of {', '.join(pin.name for pin in CHARTS)}")


if __name__ == "__main__":
    # toolchain/build.sh: `python3 charts.py <chart>` prints the module@version holding the
    # chart and the chart's folder in it.
    [_, chart_name] = sys.argv
    pin = chart(chart_name)
    print(pin.module, pin.source_path)
