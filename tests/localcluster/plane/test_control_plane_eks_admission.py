"""The local kube-apiserver admits pods as EKS's does: EKS's admission plugins, each one a plugin of
the pinned kube-apiserver, and ExtendedResourceToleration giving a GPU pod the GPU taint's
toleration that its author did not write."""

import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes.client

from localcluster.plane.control_plane import EKS_ADMISSION_PLUGINS, ControlPlane
from localcluster.plane.nodes import GPU_TAINT
from localcluster.plane.workloads import PodSpecification, ensure_namespace, pod_manifest

NAMESPACE = "admission-like-eks"


def _known_plugins(bin_dir: Path) -> set[str]:
    """The plugin names ``kube-apiserver --help`` lists for ``--enable-admission-plugins``."""
    help_text = subprocess.run(
        [str(bin_dir / "kube-apiserver"), "--help"], capture_output=True, text=True, check=False
    ).stdout
    line = next(
        text for text in help_text.splitlines() if text.lstrip().startswith("--enable-admission-plugins")
    )
    listed = line.split("Comma-delimited list of admission plugins:", 1)[1].split(".", 1)[0]
    return set(re.findall(r"[A-Za-z]+", listed))


def test_every_eks_plugin_is_a_plugin_of_the_pinned_apiserver(bin_dir: Path) -> None:
    known = _known_plugins(bin_dir)
    assert "ExtendedResourceToleration" in known, "the help text's list was read"
    assert set(EKS_ADMISSION_PLUGINS) - known == set()


def test_the_local_apiserver_runs_them(control_plane: ControlPlane) -> None:
    argv = [str(arg) for arg in control_plane.apiserver.popen.args]  # type: ignore[union-attr]
    flags = [arg for arg in argv if arg.startswith("--enable-admission-plugins=")]
    assert len(flags) == 1
    assert set(flags[0].split("=", 1)[1].split(",")) == set(EKS_ADMISSION_PLUGINS)


def _created(control_plane: ControlPlane, name: str, gpus: int) -> dict[str, Any]:
    """Create a pod that writes no toleration and return it as the API server stored it."""
    api = control_plane.api_client()
    ensure_namespace(api, NAMESPACE)
    manifest = pod_manifest(PodSpecification(name=name, gpus=gpus), namespace=NAMESPACE)
    manifest["spec"].pop("tolerations", None)
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_pod(NAMESPACE, manifest)
    stored: dict[str, Any] = api.sanitize_for_serialization(core.read_namespaced_pod(name, NAMESPACE))
    return stored


def _gpu_tolerations(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in pod["spec"].get("tolerations") or [] if t.get("key") == GPU_TAINT["key"]]


def test_a_gpu_pod_gets_the_gpu_taints_toleration_without_writing_one(control_plane: ControlPlane) -> None:
    pod = _created(control_plane, "wants-a-gpu", gpus=1)
    assert _gpu_tolerations(pod) == [
        {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
    ]


def test_a_pod_without_a_gpu_request_gets_no_gpu_toleration(control_plane: ControlPlane) -> None:
    pod = _created(control_plane, "wants-no-gpu", gpus=0)
    assert _gpu_tolerations(pod) == []
