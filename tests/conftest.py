"""Fixtures shared by the suites that need a real control plane (e2e, Pulumi dry run)."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from localcluster.host.images import ImagesNotBuilt, LocalImages
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from tests.docs.cluster_samples import WRITE_OPTION, DocSamples

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN_DIR = Path(os.environ.get("LOCALCLUSTER_BIN_DIR", REPO_ROOT / ".cache" / "bin"))
CONTROL_PLANE_BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-scheduler",
    "kube-controller-manager",
    "gpu-scheduler",
)

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
"""Property tests judge what the code answers, never how fast: hypothesis's per-example deadline
(200 ms by default) would fail a correct example on a loaded machine. Timings live in ``make bench``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        WRITE_OPTION,
        action="store_true",
        help="rewrite the docs' cluster samples with what the tests print (tests/docs/cluster_samples.py)",
    )


@pytest.fixture(scope="session")
def doc_samples(request: pytest.FixtureRequest) -> DocSamples:
    """The docs' cluster samples: checked against what a test printed, or rewritten with it."""
    return DocSamples(write=bool(request.config.getoption(WRITE_OPTION)))


BUILT_FIXTURES = ("bin_dir", "images")
"""Fixtures that need a build: the control-plane binaries, the built container images."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that needs a build (one of ``BUILT_FIXTURES``, itself or through another fixture:
    a control plane, a cluster, the Pulumi engine suite's, an image) is an ``e2e`` test, so
    ``make check`` (``-m "not e2e"``) never starts one and ``make test`` runs them all."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in BUILT_FIXTURES):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    """The control-plane binaries (`make binaries`); missing ones fail the run, never skip it."""
    missing = [name for name in CONTROL_PLANE_BINARIES if not (BIN_DIR / name).is_file()]
    if missing:
        pytest.fail(f"missing {', '.join(missing)} in {BIN_DIR}: run `make binaries` first")
    return BIN_DIR


@pytest.fixture(scope="session")
def control_plane(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """One etcd + kube-apiserver (RBAC, PodSecurity admission) for the whole session."""
    with start_control_plane(bin_dir, tmp_path_factory.mktemp("control-plane")) as plane:
        yield plane


@pytest.fixture(scope="session")
def images() -> LocalImages:
    """The container images built from the current sources (`make images`); not built is a
    failure, never a skip."""
    try:
        return LocalImages.for_current_sources()
    except ImagesNotBuilt as missing:
        pytest.fail(str(missing))
