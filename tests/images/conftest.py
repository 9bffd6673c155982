"""Fixtures for the tests of the built images (``make images`` builds them; missing ones fail)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.images import ImagesNotBuilt, LocalImages
from localcluster.processes import ProcessGroup
from tests.extender.pki import Pki, make_pki


@pytest.fixture(scope="session")
def images() -> LocalImages:
    """The images built from the current sources; not built is a failure, never a skip."""
    try:
        return LocalImages.for_current_sources()
    except ImagesNotBuilt as missing:
        pytest.fail(str(missing))


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[ProcessGroup]:
    """Containers started by a test (their logs in its directory), stopped after it."""
    with ProcessGroup(tmp_path) as group:
        yield group


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    directory = tmp_path / "pki"
    directory.mkdir()
    return make_pki(directory)
