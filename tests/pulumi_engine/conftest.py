"""Fixtures: the built engine (missing parts fail the suite), a control plane per module, a
kubeconfig with inline credentials for it, as a platform team would hand one out, and the
team's own certificates for the extender (``certificates.provided``)."""

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from localcluster.control_plane import ControlPlane, start_control_plane
from tests.pulumi.provided_pki import TeamPki
from tests.pulumi_engine.engine import Engine, EngineMissing, find_engine

DEPLOYER = "pulumi-deployer"
DEPLOYER_GROUPS = ("system:masters",)
"""The identity ``pulumi up`` uses: it creates ClusterRoles and binds built-in ones, which takes
the rights it grants (RBAC escalation check), so cluster-admin as a platform team's CI has."""


@dataclass(frozen=True)
class Kubeconfig:
    """A kubeconfig's text and the client key it embeds (which must never reach the state)."""

    text: str = ""
    client_key_pem: str = ""

    def __repr__(self) -> str:
        return "Kubeconfig(...)"


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
    credentials = cluster.credentials(DEPLOYER, "pulumi-deployer", groups=DEPLOYER_GROUPS)

    def data(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": cluster.server, "certificate-authority-data": data(cluster.ca.ca_file)},
            }
        ],
        "users": [
            {
                "name": DEPLOYER,
                "user": {
                    "client-certificate-data": data(credentials.files.cert),
                    "client-key-data": data(credentials.files.key),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": DEPLOYER}}],
        "current-context": "local",
    }
    return Kubeconfig(yaml.safe_dump(document, sort_keys=False), credentials.files.key.read_text())


@pytest.fixture(scope="module")
def team_pki() -> TeamPki:
    """A CA, the extender's server certificate and the scheduler's client certificate, made here
    with ``cryptography`` as a team's own PKI would issue them."""
    return TeamPki.new()
