"""The stack's Helm charts rendered from their pinned sources by the toolchain's helm.

``make charts`` (``toolchain/build.sh <bin> charts``) puts ``helm`` and each chart's source, from
the Go module zip ``components/stack_config/charts.py`` names, into ``<bin>/charts/<name>/``,
beside ``<name>.source`` (the ``module@version`` and folder it was copied from). This module
renders a chart there with given values (``helm template``, never an install: no cluster, no
chart repository), and checks values against the chart's own: a key the chart does not have,
or one whose value does not change what the chart renders, is a key Helm would ignore silently.
"""

import copy
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.stack_config.charts import ChartPin

CHARTS_DIR = "charts"
"""Where the chart sources sit under the binaries' directory."""
HELM_SECONDS = 60
"""The longest one ``helm template`` may take (a render takes well under a second)."""
FREE_FORM_KEYS = frozenset(
    {"nodeSelector", "resources", "annotations", "labels", "podAnnotations", "podLabels", "extraArgs"}
)
"""Values a chart hands to Kubernetes whole (``toYaml``): the keys below them are Kubernetes',
not the chart's, so a values key ends there (``extraArgs``: a program's flags, by name). A key
whose default in the chart is an empty map or null is free-form too: the chart states the key,
not its shape."""
PROBE_KEY = "chart-probe.example.com/changed"
"""The key added to a free-form map to see whether the chart renders it."""


class ChartError(Exception):
    """helm could not render a chart, or its source is missing."""


@dataclass(frozen=True)
class ChartSource:
    """A chart's published source: its folder and where it was copied from."""

    directory: Path
    origin: str
    """``module@version path``, as ``toolchain/build.sh`` recorded it."""

    @classmethod
    def published(cls, bin_dir: Path, pin: ChartPin) -> "ChartSource":
        directory = bin_dir / CHARTS_DIR / pin.name
        record = bin_dir / CHARTS_DIR / f"{pin.name}.source"
        if not (directory / "Chart.yaml").is_file() or not record.is_file():
            raise ChartError(f"no source of chart {pin.name} in {directory.parent}: run `make charts`")
        return cls(directory, record.read_text().strip())

    def chart_yaml(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load((self.directory / "Chart.yaml").read_text())
        return loaded

    def default_values(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load((self.directory / "values.yaml").read_text()) or {}
        return loaded

    def schema(self) -> dict[str, Any] | None:
        """The chart's ``values.schema.json``, if it has one."""
        path = self.directory / "values.schema.json"
        if not path.is_file():
            return None
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded


def render(
    helm: Path,
    chart: Path,
    *,
    release: str,
    namespace: str,
    values: Mapping[str, Any] | None,
    kube_version: str,
) -> list[dict[str, Any]]:
    """The objects ``helm template`` renders for the chart in ``chart`` with ``values`` (the
    chart's own CRDs folder left out, as a release with ``skipCrds`` leaves it), for a cluster of
    ``kube_version``."""
    with tempfile.TemporaryDirectory(prefix="helm-") as home:
        values_file = Path(home) / "values.json"
        values_file.write_text(json.dumps(values or {}))
        argv = [str(helm), "template", release, str(chart), "--namespace", namespace]
        argv += ["--values", str(values_file), "--kube-version", kube_version]
        # helm's own state (repositories, cache) in a scratch home: nothing is read from the user's.
        env = {**os.environ, "HOME": home}
        env |= {f"HELM_{kind}_HOME": home for kind in ("CACHE", "CONFIG", "DATA")}
        done = subprocess.run(  # noqa: S603 - the toolchain's helm, arguments built here
            argv, capture_output=True, text=True, env=env, timeout=HELM_SECONDS, check=False
        )
    if done.returncode != 0:
        raise ChartError(f"helm template {chart.name} failed: {done.stderr.strip()}")
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def value_paths(values: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of ``values``' leaves; a map under one of ``FREE_FORM_KEYS`` counts as one
    leaf, and so does a list."""
    paths = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in FREE_FORM_KEYS:
            paths.extend(value_paths(value, f"{path}."))
        else:
            paths.append(path)
    return paths


def _schema_knows(schema: Mapping[str, Any], parts: list[str]) -> bool:
    """Whether a JSON schema of the values admits the path: a declared property at each step,
    or a step under a map whose other properties are allowed."""
    node: Mapping[str, Any] = schema
    for part in parts:
        properties = node.get("properties", {})
        if part in properties:
            node = properties[part]
            continue
        open_map = node.get("additionalProperties") not in (None, False)
        return open_map or part in node.get("patternProperties", {})
    return True


def _defaults_know(defaults: Mapping[str, Any], parts: list[str]) -> bool:
    """Whether the chart's values.yaml has the path: each step a key of the map above, or below
    a free-form key (one of ``FREE_FORM_KEYS``, or a default that is an empty map or null)."""
    node: Any = defaults
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
        if part in FREE_FORM_KEYS or node is None or node == {}:
            return True
    return True


def unknown_paths(
    values: Mapping[str, Any], defaults: Mapping[str, Any], schema: Mapping[str, Any] | None = None
) -> list[str]:
    """The paths of ``values`` that are neither in the chart's ``values.yaml`` (``defaults``) nor,
    where the chart has one, in its values schema."""
    return [
        path
        for path in value_paths(values)
        if not _defaults_know(defaults, path.split("."))
        and not (schema is not None and _schema_knows(schema, path.split(".")))
    ]


def changed(value: Any) -> Any:
    """A different value of the same shape: what a key's value becomes to see whether the chart
    renders it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return f"{value}-changed"
    if isinstance(value, dict):
        return {**value, PROBE_KEY: "probe"}
    if isinstance(value, list):
        return [*value, copy.deepcopy(value[-1])] if value else [{PROBE_KEY: "probe"}]
    return "changed"


def with_path_changed(values: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``values`` with the leaf at dotted ``path`` ``changed``."""
    result = copy.deepcopy(dict(values))
    *parents, leaf = path.split(".")
    node = result
    for part in parents:
        node = node[part]
    node[leaf] = changed(node[leaf])
    return result


def ignored_paths(
    values: Mapping[str, Any], render_with: "RenderWith", baseline: list[dict[str, Any]] | None = None
) -> Iterator[str]:
    """The paths of ``values`` whose change leaves the rendered objects as they were."""
    before = baseline if baseline is not None else render_with(values)
    for path in value_paths(values):
        if render_with(with_path_changed(values, path)) == before:
            yield path


class RenderWith:
    """``render`` of one chart and release, taking only the values."""

    def __init__(self, helm: Path, chart: Path, *, release: str, namespace: str, kube_version: str) -> None:
        self.helm, self.chart = helm, chart
        self.release, self.namespace, self.kube_version = release, namespace, kube_version

    def __call__(self, values: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        return render(
            self.helm,
            self.chart,
            release=self.release,
            namespace=self.namespace,
            values=values,
            kube_version=self.kube_version,
        )
