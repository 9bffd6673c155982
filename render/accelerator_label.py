"""Cluster Autoscaler's GPU label for a group of instance types, from EC2's GPU data.

Cluster Autoscaler's AWS provider treats a node carrying ``k8s.amazonaws.com/accelerator`` as a
GPU node: until the device plugin advertises ``nvidia.com/gpu`` such a node counts as not ready
yet, so Cluster Autoscaler waits for it instead of launching another node for the same pending
pod. Only the label's presence matters for that; its value names the GPU model (Cluster
Autoscaler's own example: ``nvidia-tesla-k80``) and appears in its GPU metrics and in
``--gpu-total`` limits.

The value comes from EC2 ``GpuInfo.Gpus[].Name`` through ``ACCELERATOR_NAMES``, the one table of
the names this project knows; a GPU missing from it is a configuration error naming the group,
never a guess. A pure module (no Pulumi import).
"""

from collections.abc import Sequence

from render.gpu_memory import GPU_MANUFACTURER, InstanceGpus

ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
"""Cluster Autoscaler's GPU node label on AWS (``GPULabel`` of its AWS cloud provider)."""
ACCELERATOR_NAMES = {
    "T4": "nvidia-tesla-t4",
    "T4g": "nvidia-t4g",
    "V100": "nvidia-tesla-v100",
    "A100": "nvidia-tesla-a100",
    "A10G": "nvidia-a10g",
    "L4": "nvidia-l4",
    "L40S": "nvidia-l40s",
    "H100": "nvidia-h100",
    "H200": "nvidia-h200",
    "B200": "nvidia-b200",
    "B300": "nvidia-b300",
    "RTX PRO 4500": "nvidia-rtx-pro-4500",
    "RTX PRO Server 6000": "nvidia-rtx-pro-6000",
}
"""EC2's name of an NVIDIA GPU (``GpuDeviceInfo.Name``) -> the label value. Data-centre GPUs that
NVIDIA sold under the Tesla brand keep ``tesla`` in the name, as Kubernetes' GPU labels spell them.
Every NVIDIA GPU of EC2's catalogue is here (tests/render/test_accelerator_label.py checks)."""


class AcceleratorError(ValueError):
    """A GPU with no accelerator name; the message names the group, the type and the GPU."""


def accelerator_name(where: str, described: Sequence[InstanceGpus]) -> str:
    """The label value for a group whose types are ``described``: that of the first type's GPU,
    the type Cluster Autoscaler builds a group's template from. Every type's GPUs must have a
    name, so a group never carries a value that one of its types could not."""
    for instance in described:
        for gpu in instance.gpus:
            if gpu.manufacturer != GPU_MANUFACTURER or gpu.name not in ACCELERATOR_NAMES:
                raise AcceleratorError(
                    f"{where}: {instance.instance_type} has the {gpu.manufacturer} GPU {gpu.name!r}, which "
                    f"has no {ACCELERATOR_LABEL} name; known: {', '.join(sorted(ACCELERATOR_NAMES))} "
                    "(render/accelerator_label.py, ACCELERATOR_NAMES)"
                )
    first = next((instance.gpus[0] for instance in described if instance.gpus), None)
    if first is None:
        raise AcceleratorError(f"{where}: no instance type with a GPU")
    return ACCELERATOR_NAMES[first.name]
