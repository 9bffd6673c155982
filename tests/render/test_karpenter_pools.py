"""The NodePools' split by per-GPU memory and capacity type (the pure renderer)."""

from render.gpu_memory import Gpu, InstanceGpus
from render.karpenter_pools import GpuGroupTypes, memory_classes


def gpus(instance_type: str, memory_mib: int) -> InstanceGpus:
    return InstanceGpus(instance_type, (Gpu("A10G", "NVIDIA", 1, memory_mib),), ("x86_64",))


def test_each_pool_carries_one_capacity_type_cheaper_first_within_a_memory_size() -> None:
    classes = memory_classes(
        [
            GpuGroupTypes(
                "gpuNodeGroups[0]", (gpus("g5.xlarge", 22888), gpus("g6e.xlarge", 45776)), "ON_DEMAND"
            ),
            GpuGroupTypes("gpuNodeGroups[1]", (gpus("g5.2xlarge", 22888),), "SPOT"),
        ]
    )
    assert [(each.name, each.capacity_types, each.instance_types) for each in classes] == [
        ("gpu-22888mib-spot", ("spot",), ("g5.2xlarge",)),
        ("gpu-22888mib", ("on-demand",), ("g5.xlarge",)),
        ("gpu-45776mib", ("on-demand",), ("g6e.xlarge",)),
    ]
    weights = [each.weight for each in classes]
    assert weights == sorted(weights, reverse=True)
    assert len(set(weights)) == len(weights), "no two pools tie (Karpenter would order them by name)"
