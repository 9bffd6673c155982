"""docs/versions.md states each version as the repository pins it: every (version, file) pair
below must appear in the page and be read from the file by its pattern, so a pin that moves
without the page fails here."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "versions.md"
PINS: list[tuple[str, str, str]] = [
    # (the page's text, the file that pins it, a pattern whose group 1 is that text)
    ("1.35", "components/stack_config/stack.py", r'DEFAULT_KUBERNETES_VERSION = "([0-9.]+)"'),
    ("v1.35.8", "plugin/go.mod", r"\tk8s.io/kubernetes (v[0-9.]+)\n"),
    (
        "registry.k8s.io/kube-scheduler:v1.35.8",
        "components/stack_config/scheduler.py",
        r'"(registry.k8s.io/kube-scheduler:v[0-9.]+)"',
    ),
    ("1.14.1", "components/stack_config/charts.py", r'name="karpenter",\s+version="([0-9.]+)"'),
    ("1.14.1", "toolchain/karpenter/go.mod", r"sigs.k8s.io/karpenter (?:v)?([0-9.]+)"),
    ("9.59.0", "components/stack_config/charts.py", r'name="cluster-autoscaler",\s+version="([0-9.]+)"'),
    (
        "v1.35.2",
        "components/stack_config/autoscaling.py",
        r'DEFAULT_CLUSTER_AUTOSCALER_IMAGE_TAG = "(v[0-9.]+)"',
    ),
    ("0.17.4", "components/stack_config/charts.py", r'name="nvidia-device-plugin",\s+version="([0-9.]+)"'),
    (
        "al2023@v20260903",
        "components/stack_config/autoscaling.py",
        r'DEFAULT_KARPENTER_AMI_ALIAS = "([^"]+)"',
    ),
    ("3.272.0", "constraints.txt", r"^pulumi==([0-9.]+)$"),
    ("3.274.1", "pulumi-engine/cli/go.mod", r"github.com/pulumi/pulumi/pkg/v3 v([0-9.]+)"),
    ("4.25.0", "constraints.txt", r"^pulumi_kubernetes==([0-9.]+)$"),
    ("7.51.1", "constraints.txt", r"^pulumi_aws==([0-9.]+)$"),
    ("4.4.0", "constraints.txt", r"^pulumi_eks==([0-9.]+)$"),
    ("3.11.0", "constraints.txt", r"^pulumi_awsx==([0-9.]+)$"),
    ("3.11", "pyproject.toml", r'python_version = "([0-9.]+)"'),
    ("1.26.6", "pulumi-engine/cli/go.mod", r"^go ([0-9.]+)$"),
    ("1.25", "plugin/go.mod", r"^go ([0-9]+\.[0-9]+)"),
]


@pytest.mark.parametrize(("text", "path", "pattern"), PINS, ids=[f"{p[1]}:{p[0]}" for p in PINS])
def test_the_page_states_the_pinned_version(text: str, path: str, pattern: str) -> None:
    found = re.search(pattern, (ROOT / path).read_text(), flags=re.MULTILINE)
    assert found is not None, f"{path}: no pin matches {pattern}"
    assert found.group(1) == text, f"{path} pins {found.group(1)}; docs/versions.md says {text}"
    assert text in PAGE.read_text()
    assert f"`{path}`" in PAGE.read_text(), f"docs/versions.md does not name {path}"
