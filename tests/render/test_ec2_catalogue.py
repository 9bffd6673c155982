"""The one EC2 snapshot is moto's catalogue (EC2's real data), not numbers typed by hand."""

from render.ec2_catalogue import (
    CPU_TYPES,
    REFRESH_COMMAND,
    catalogue,
    load_snapshot,
    snapshot_entries,
    trimmed,
)


def test_the_snapshot_is_still_the_catalogue() -> None:
    described = catalogue()
    assert list(load_snapshot().entries) == snapshot_entries(described), f"run: {REFRESH_COMMAND}"


def test_it_holds_every_gpu_type_and_the_cpu_types_with_their_fields() -> None:
    described = {entry["InstanceType"]: entry for entry in catalogue()}
    snapshot = load_snapshot().by_name()
    gpu_types = {name for name, entry in described.items() if entry.get("GpuInfo")}
    assert set(snapshot) == gpu_types | set(CPU_TYPES)
    assert len(gpu_types) > 50
    for name, entry in snapshot.items():
        assert entry == trimmed(described[name])
        assert entry["VCpuInfo"]["DefaultVCpus"] == described[name]["VCpuInfo"]["DefaultVCpus"]
        assert ("GpuInfo" in entry) == (name in gpu_types)
    assert "moto" in load_snapshot().source
