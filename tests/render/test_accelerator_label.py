"""Cluster Autoscaler's GPU label from EC2's data: moto's catalogue, not names typed per type."""

import pytest

from render.accelerator_label import ACCELERATOR_NAMES, AcceleratorError, accelerator_name
from render.ec2_catalogue import catalogue
from render.gpu_memory import GPU_MANUFACTURER, Gpu, InstanceGpus, instance_gpus_from_ec2

WHERE = "gpu-scheduler-eks:gpuNodeGroups[0].instanceTypes (GPU node group 'g')"


@pytest.fixture(scope="module")
def ec2() -> dict[str, InstanceGpus]:
    """moto's whole catalogue (read once: it takes a while)."""
    return {entry["InstanceType"]: instance_gpus_from_ec2(entry) for entry in catalogue()}


def test_every_nvidia_gpu_of_the_catalogue_has_a_name(ec2: dict[str, InstanceGpus]) -> None:
    """A GPU EC2 adds fails here first, not in a user's ``pulumi preview``."""
    names = {gpu.name for item in ec2.values() for gpu in item.gpus if gpu.manufacturer == GPU_MANUFACTURER}
    assert names == set(ACCELERATOR_NAMES)


@pytest.mark.parametrize(
    ("instance_type", "name"),
    [
        ("g4dn.xlarge", "nvidia-tesla-t4"),
        ("g5.xlarge", "nvidia-a10g"),
        ("g6.xlarge", "nvidia-l4"),
        ("g6e.xlarge", "nvidia-l40s"),
        ("p4d.24xlarge", "nvidia-tesla-a100"),
        ("p4de.24xlarge", "nvidia-tesla-a100"),
        ("p5.48xlarge", "nvidia-h100"),
    ],
)
def test_the_name_follows_the_types_gpu(ec2: dict[str, InstanceGpus], instance_type: str, name: str) -> None:
    assert accelerator_name(WHERE, [ec2[instance_type]]) == name


def test_a_group_of_several_types_is_named_after_its_first(ec2: dict[str, InstanceGpus]) -> None:
    """The type Cluster Autoscaler builds the group's template from."""
    assert accelerator_name(WHERE, [ec2["g5.xlarge"], ec2["g4dn.xlarge"]]) == "nvidia-a10g"
    assert accelerator_name(WHERE, [ec2["g4dn.xlarge"], ec2["g5.xlarge"]]) == "nvidia-tesla-t4"


def test_an_unknown_gpu_is_an_error_naming_the_group_type_and_gpu(ec2: dict[str, InstanceGpus]) -> None:
    unknown = InstanceGpus("g9.xlarge", (Gpu("Z900", GPU_MANUFACTURER, 1, 65536),), ("x86_64",))
    with pytest.raises(AcceleratorError, match=r"gpuNodeGroups\[0\].*g9\.xlarge has the NVIDIA GPU 'Z900'"):
        accelerator_name(WHERE, [ec2["g5.xlarge"], unknown])
