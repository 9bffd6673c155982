"""The gpu-scheduler image: its version stamp, and plugin mode binding pods on the local control
plane with the configuration the stack deploys (host network, read-only, user 65532)."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.host.images import LocalImages, podman
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.workloads import PodSpecification
from policy import BELOW_MINIMUM
from testbed.e2e_cluster import INVENTORY, E2ECluster, e2e_cluster, shaped_like


def test_prints_the_version_of_the_binary_built_from_the_same_module(
    images: LocalImages, bin_dir: Path
) -> None:
    in_image = podman("run", "--rm", "--read-only", images.gpu_scheduler, "--version").strip()
    from_source = subprocess.run(
        [str(bin_dir / "gpu-scheduler"), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert in_image == from_source
    assert in_image.startswith("Kubernetes v1.35.")


@pytest.fixture
def plugin_cluster(bin_dir: Path, tmp_path: Path, images: LocalImages) -> Iterator[E2ECluster]:
    with e2e_cluster(bin_dir, tmp_path, "plugin") as cluster:
        cluster.images = images
        yield cluster


def test_binds_pods_in_plugin_mode(plugin_cluster: E2ECluster) -> None:
    small = SimulatedNode("gpu-22888", shaped_like("p5.48xlarge", 22888), "us-east-1a")
    large = SimulatedNode("gpu-81920", shaped_like("p5.48xlarge", 81920), "us-east-1b")
    plugin_cluster.add_nodes(SimulatedNode("system-1", INVENTORY["m5.xlarge"], "us-east-1a"), small, large)
    scheduler = plugin_cluster.start()
    argv = scheduler.process.popen.args
    assert isinstance(argv, list)
    assert any(str(arg).startswith("--name=") for arg in argv), "runs the image"
    plugin_cluster.submit(PodSpecification("fits-large", min_memory="40960"))
    plugin_cluster.submit(PodSpecification("fits-none", min_memory="100000"))
    assert plugin_cluster.outcome("fits-large", bound_only=True).node == large.name
    assert BELOW_MINIMUM in plugin_cluster.outcome("fits-none").message
    assert scheduler.process.stop() == 0, scheduler.process.log_tail()
