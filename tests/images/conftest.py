"""Fixtures for the tests of the built images (the ``images`` fixture is in tests/conftest.py)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.host.processes import ProcessGroup
from testbed.pki import Pki, make_pki


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
