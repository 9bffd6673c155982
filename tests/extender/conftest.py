"""Fixtures: a fresh test PKI and a running extender per test."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.extender import ThreadedExtender, settings_for
from testbed.pki import Pki, make_pki


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


@pytest.fixture
def extender(pki: Pki) -> Iterator[ThreadedExtender]:
    server = ThreadedExtender(settings_for(pki), pki).start()
    yield server
    server.stop()
