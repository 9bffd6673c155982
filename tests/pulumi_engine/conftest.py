"""Fixtures: the built engine (missing parts fail the suite), a control plane per module, a
kubeconfig with inline credentials for it, as a platform team would hand one out, and the
team's own certificates for the extender (``certificates.provided``); all from
``localcluster``, which ``make demo`` deploys with too."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.host.team_pki import TeamPki
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.services.pulumi_stack import (
    Engine,
    EngineMissing,
    Kubeconfig,
    deployer_kubeconfig,
    find_engine,
)


@pytest.fixture(scope="module")
def engine() -> Engine:
    """The built engine; a missing part fails every test here (never a skip)."""
    try:
        return find_engine()
    except EngineMissing as missing:
        problem = str(missing)
    pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="module")
def cluster(bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """This module's own etcd + kube-apiserver (other suites leave objects in theirs)."""
    with start_control_plane(bin_dir, tmp_path_factory.mktemp("engine-control-plane")) as plane:
        yield plane


@pytest.fixture(scope="module")
def kubeconfig(cluster: ControlPlane) -> Kubeconfig:
    """Credentials for a new client certificate, every file inlined as ``*-data``."""
    return deployer_kubeconfig(cluster)


@pytest.fixture(scope="module")
def team_pki() -> TeamPki:
    """A CA, the extender's server certificate and the scheduler's client certificate, made here
    with ``cryptography`` as a team's own PKI would issue them."""
    return TeamPki.new()
