"""The scale run's fleet and workload: GPU nodes of real EC2 types, pods whose every one must fit.

The instance types come from the project's EC2 snapshot (render/), read through the
same rule the Pulumi program uses for the memory label; each node is the realistic fixture
node (GFD/NFD labels, 20 cached images, conditions, the GPU taint) made over for its type.
A pod "fits" here in the strongest sense: whatever order the scheduler places the pods in and
whichever GPUs the others take, there is room for it. That holds when every pod could have a
GPU of the largest minimum asked for, so the run checks exactly that before it starts and can
then require every pod to bind.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.fleet.cluster_load import GpuPod
from localcluster.plane.inventory import instance_type_from_ec2
from render.ec2_catalogue import Snapshot, load_snapshot
from testbed.eks_nodes import GpuInstanceType

SCALE_INSTANCE_TYPES = (
    "g4dn.xlarge",  # 1 x T4
    "g5.2xlarge",  # 1 x A10G
    "g5.12xlarge",  # 4 x A10G
    "g6.xlarge",  # 1 x L4
    "g6e.xlarge",  # 1 x L40S
    "p4d.24xlarge",  # 8 x A100 40 GB
    "p5.48xlarge",  # 8 x H100
    "p5e.48xlarge",  # 8 x H200
)
"""Cycled node by node: the inference and training types an EKS GPU fleet mixes, from T4 to H200."""
SCALE_MINIMUMS_MIB: tuple[int | None, ...] = (None, 16384, 22888, 45776, 81920)
"""Cycled pod by pod: no minimum, then T4, A10G/L4, L40S and H100 sized minimums."""
GPU_FAMILIES = {
    "T4": "turing",
    "A10G": "ampere",
    "A100": "ampere",
    "L4": "ada-lovelace",
    "L40S": "ada-lovelace",
    "H100": "hopper",
    "H200": "hopper",
}
"""GPU Feature Discovery's ``nvidia.com/gpu.family`` for the GPUs above (EC2 does not say)."""


class WorkloadDoesNotFit(ValueError):
    """More pods than the fleet can always place: the run could not require every pod to bind."""


@dataclass(frozen=True)
class FleetCapacity:
    """GPUs of the first ``nodes`` nodes, by memory label (MiB per GPU)."""

    nodes: int
    gpus_by_label: Mapping[int, int]

    def gpus_with_at_least(self, minimum_mib: int) -> int:
        return sum(count for label, count in self.gpus_by_label.items() if label >= minimum_mib)


def fleet_types(
    names: Sequence[str] = SCALE_INSTANCE_TYPES, snapshot: Snapshot | None = None
) -> tuple[GpuInstanceType, ...]:
    """The fixture's per-type description of each named type, read from the EC2 snapshot.

    GFD's ``nvidia.com/gpu.memory`` is what the driver reports, which EC2 does not give; the
    EC2 figure stands in for it (no policy reads that label).
    """
    entries = (snapshot or load_snapshot()).by_name()
    described = []
    for name in names:
        if name not in entries:
            raise KeyError(f"instance type {name} is not in the EC2 snapshot")
        kind = instance_type_from_ec2(entries[name])
        if not kind.has_gpu:
            raise ValueError(f"instance type {name} has no GPU")
        described.append(
            GpuInstanceType(
                name=kind.name,
                label_mib=kind.gpu_memory_mib,
                gfd_memory_mib=kind.gpu_memory_mib,
                product=f"NVIDIA-{kind.gpu_name}",
                family=GPU_FAMILIES.get(kind.gpu_name, "unknown"),
                gpus=kind.gpu_count,
                cpu=str(kind.vcpus),
                memory_ki=kind.memory_mib * 1024,
            )
        )
    return tuple(described)


def capacity(types: Sequence[GpuInstanceType], nodes: int) -> FleetCapacity:
    """The GPUs of ``nodes`` nodes that cycle through ``types`` (as ``make_nodes`` does)."""
    gpus: dict[int, int] = {}
    for index in range(nodes):
        kind = types[index % len(types)]
        gpus[kind.label_mib] = gpus.get(kind.label_mib, 0) + kind.gpus
    return FleetCapacity(nodes=nodes, gpus_by_label=gpus)


def scale_pods(count: int, minimums: Sequence[int | None] = SCALE_MINIMUMS_MIB) -> list[GpuPod]:
    """``count`` one-GPU pods, minimums interleaved pod by pod."""
    return [GpuPod(f"bench-{index:05d}", minimums[index % len(minimums)]) for index in range(count)]


def require_fit(fleet: FleetCapacity, pods: Sequence[GpuPod]) -> None:
    """Raise WorkloadDoesNotFit unless every pod fits whatever GPUs the others take."""
    largest = max((pod.min_memory_mib or 0 for pod in pods), default=0)
    room = fleet.gpus_with_at_least(largest)
    if len(pods) > room:
        raise WorkloadDoesNotFit(
            f"{len(pods)} pods on {fleet.nodes} nodes: only {room} GPUs have >= {largest} MiB, so the "
            "pods asking for that much may find them taken; use fewer pods or more nodes"
        )
