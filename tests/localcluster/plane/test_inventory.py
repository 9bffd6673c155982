"""The simulated fleet's types come from the EC2 snapshot, labelled by the program's own rule."""

from localcluster.plane.inventory import DEMO_INSTANCE_TYPES, load_inventory
from render.ec2_catalogue import catalogue
from render.gpu_memory import group_gpu_memory_mib, instance_gpus_from_ec2


def test_each_gpu_type_is_labelled_with_its_per_gpu_memory() -> None:
    entries = {entry["InstanceType"]: entry for entry in catalogue()}
    inventory = load_inventory()
    assert tuple(inventory) == DEMO_INSTANCE_TYPES
    for name, instance_type in inventory.items():
        assert instance_type.vcpus == entries[name]["VCpuInfo"]["DefaultVCpus"]
        assert instance_type.memory_mib == entries[name]["MemoryInfo"]["SizeInMiB"]
        gpus = entries[name].get("GpuInfo")
        if gpus is None:
            assert not instance_type.has_gpu
            continue
        per_gpu = {gpu["MemoryInfo"]["SizeInMiB"] for gpu in gpus["Gpus"]}
        assert instance_type.gpu_memory_mib == min(per_gpu)
        assert instance_type.gpu_memory_mib == group_gpu_memory_mib(
            name, [instance_gpus_from_ec2(entries[name])]
        )
        assert instance_type.gpu_count == sum(gpu["Count"] for gpu in gpus["Gpus"])
        assert instance_type.gpu_memory_mib < gpus["TotalGpuMemoryInMiB"] or instance_type.gpu_count == 1
