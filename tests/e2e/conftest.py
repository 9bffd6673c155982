"""Each e2e test gets its own control plane (about 3 s to start), in each scheduling mode."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.modes import SCHEDULER_MODES, SchedulerMode
from testbed.e2e_cluster import E2ECluster, e2e_cluster


@pytest.fixture(params=SCHEDULER_MODES)
def mode(request: pytest.FixtureRequest) -> SchedulerMode:
    value: SchedulerMode = request.param
    return value


@pytest.fixture
def cluster(bin_dir: Path, tmp_path: Path, mode: SchedulerMode) -> Iterator[E2ECluster]:
    with e2e_cluster(bin_dir, tmp_path, mode) as started:
        yield started


@pytest.fixture
def cached_cluster(bin_dir: Path, tmp_path: Path) -> Iterator[E2ECluster]:
    """For tests about the extender's node cache (extender-cached mode only)."""
    with e2e_cluster(bin_dir, tmp_path, "extender-cached") as started:
        yield started


@pytest.fixture
def extender_cluster(bin_dir: Path, tmp_path: Path) -> Iterator[E2ECluster]:
    """For tests about the extender itself (stopping it, its TLS)."""
    with e2e_cluster(bin_dir, tmp_path, "extender") as started:
        yield started
