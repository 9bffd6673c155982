"""The NVIDIA device plugin under mocks: the pinned chart, only on the tainted GPU nodes."""

from tests.components.mocks import StackRun


def test_device_plugin_is_pinned_and_runs_only_on_tainted_gpu_nodes(run: StackRun) -> None:
    release = run.one("kubernetes:helm.sh/v3:Release", "nvidia-device-plugin-release").plain
    assert release["chart"] == "nvidia-device-plugin"
    assert release["repositoryOpts"]["repo"] == "https://nvidia.github.io/k8s-device-plugin"
    assert release["version"] == "0.17.4"
    assert release["namespace"] == "kube-system"
    gpu_group = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain
    [taint] = gpu_group["taints"]
    assert release["values"]["nodeSelector"] == {
        "nvidia.com/gpu.present": gpu_group["labels"]["nvidia.com/gpu.present"]
    }
    [toleration] = release["values"]["tolerations"]
    assert toleration == {"key": taint["key"], "operator": "Exists", "effect": "NoSchedule"}
