"""Kubernetes version strings: the cluster's minor, an image tag's, the plugin build's.

A scheduler must not be newer than its API server, and a kube-scheduler built for another
minor may use APIs the cluster lacks, so the program insists that the scheduler's minor
version equals the cluster's. Pure functions, no Pulumi import.
"""

import re
from pathlib import Path

PLUGIN_GO_MOD = Path(__file__).resolve().parent.parent / "plugin" / "go.mod"
"""The gpu-scheduler module; its ``k8s.io/kubernetes`` requirement is the image's version."""

_CLUSTER_VERSION = re.compile(r"1\.(0|[1-9][0-9]*)")
_RELEASE_TAG = re.compile(r"v1\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
_GO_MOD_REQUIREMENT = re.compile(r"^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\S+)", re.MULTILINE)


def cluster_minor(version: str) -> int | None:
    """The minor of an EKS version such as ``1.35``; None if it is not ``1.<minor>``."""
    match = _CLUSTER_VERSION.fullmatch(version)
    return int(match.group(1)) if match else None


def release_tag_minor(tag: str) -> int | None:
    """The minor of a release tag such as ``v1.35.8``; None if it is not ``v1.<minor>.<patch>``."""
    match = _RELEASE_TAG.fullmatch(tag)
    return int(match.group(1)) if match else None


def image_tag(image: str) -> str:
    """The tag of an image reference (``registry/repo:tag``), ignoring a ``@digest``; "" if none."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else ""


def go_mod_kubernetes_version(go_mod_text: str) -> str:
    """The ``k8s.io/kubernetes`` version a go.mod requires, e.g. ``v1.35.8``."""
    match = _GO_MOD_REQUIREMENT.search(go_mod_text)
    if not match:
        raise ValueError("go.mod does not require k8s.io/kubernetes")
    return match.group(1)


def plugin_kubernetes_version(go_mod: Path = PLUGIN_GO_MOD) -> str:
    """The Kubernetes release the gpu-scheduler image is built from."""
    return go_mod_kubernetes_version(go_mod.read_text(encoding="utf-8"))
