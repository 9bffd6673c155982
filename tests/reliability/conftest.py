"""The burst tests run on their own local cluster (tests/e2e's harness)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import E2ECluster, e2e_cluster


@pytest.fixture
def extender_cluster(bin_dir: Path, tmp_path: Path) -> Iterator[E2ECluster]:
    with e2e_cluster(bin_dir, tmp_path, "extender") as started:
        yield started


@pytest.fixture
def cached_cluster(bin_dir: Path, tmp_path: Path) -> Iterator[E2ECluster]:
    with e2e_cluster(bin_dir, tmp_path, "extender-cached") as started:
        yield started
