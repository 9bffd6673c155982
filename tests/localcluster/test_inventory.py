"""The inventory file is EC2's data (through moto), not numbers typed by hand."""

import json

from components.render.gpu_memory import group_gpu_memory_mib, instance_gpus_from_ec2
from localcluster.inventory import INVENTORY_FILE, catalogue_entries, load_inventory


def test_inventory_file_equals_the_ec2_catalogue() -> None:
    on_disk = json.loads(INVENTORY_FILE.read_text())["instanceTypes"]
    assert on_disk == catalogue_entries(), "run: python -m localcluster.inventory --refresh"


def test_each_gpu_type_is_labelled_with_its_per_gpu_memory() -> None:
    entries = {entry["InstanceType"]: entry for entry in catalogue_entries()}
    inventory = load_inventory()
    assert set(inventory) == set(entries)
    for name, instance_type in inventory.items():
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
