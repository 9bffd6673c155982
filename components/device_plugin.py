"""The NVIDIA device plugin (Helm chart), which advertises ``nvidia.com/gpu`` on GPU nodes.

The AL2023 NVIDIA AMI ships the driver and container toolkit but not the device plugin.
The DaemonSet runs only on nodes labelled ``nvidia.com/gpu.present=true`` (the GPU node
groups) and tolerates the GPU taint.
"""

import pulumi
import pulumi_kubernetes as k8s

from components.gpu_node_group import GPU_TAINT_KEY
from components.stack_config.charts import NVIDIA_DEVICE_PLUGIN
from contracts.cluster import GPU_PRESENT_LABEL, SYSTEM_NAMESPACE

DEVICE_PLUGIN_CHART = NVIDIA_DEVICE_PLUGIN.name
DEVICE_PLUGIN_CHART_REPOSITORY = NVIDIA_DEVICE_PLUGIN.repository
RELEASE_NAME = "nvidia-device-plugin"


def device_plugin_values() -> dict[str, object]:
    """Chart values: GPU nodes only, tolerate the GPU taint, no GPU feature discovery."""
    return {
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "gfd": {"enabled": False},
    }


class DevicePlugin(pulumi.ComponentResource):
    """A Helm release of the pinned nvidia-device-plugin chart."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        chart_version: str,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpu-scheduler-eks:index:DevicePlugin", name, None, opts)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAME,
            chart=DEVICE_PLUGIN_CHART,
            version=chart_version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=DEVICE_PLUGIN_CHART_REPOSITORY),
            namespace=SYSTEM_NAMESPACE,
            values=device_plugin_values(),
            atomic=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.register_outputs({"chartVersion": chart_version, "status": self.release.status})
