"""Ports for the local cluster's processes: outside the ephemeral range, locked against other runs,
and a process whose port another program took first started again on fresh ports."""

import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.host import ports
from localcluster.host.ports import PORT_RANGE_ENV, NoFreePort, release_ports, reserve_port
from localcluster.host.probes import LOOPBACK
from localcluster.host.processes import AddressInUse, ProcessGroup, StartupError, raise_if_exited
from localcluster.host.waiting import wait_for
from localcluster.plane.control_plane import start_control_plane

SERVER = """
import socket, sys
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen()
print("listening", flush=True)
listener.accept()
"""
"""A child that listens on the port in argv and fails with Python's own message when it cannot."""


def occupy(port: int) -> socket.socket:
    """Listen on ``port`` as a program outside the local cluster would."""
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind((LOOPBACK, port))
    squatter.listen()
    return squatter


@pytest.fixture
def reserved() -> Iterator[list[int]]:
    """Ports a test reserves, released afterwards."""
    held: list[int] = []
    yield held
    release_ports(held)


def reserve_in_child(port_range: str) -> subprocess.CompletedProcess[str]:
    """Another run on this host (its own interpreter) asking for a port of ``port_range``."""
    code = "from localcluster.host.ports import reserve_port; print(reserve_port())"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={PORT_RANGE_ENV: port_range, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_ports_are_distinct_and_outside_the_kernels_ephemeral_range(reserved: list[int]) -> None:
    reserved += [reserve_port() for _ in range(50)]
    ephemeral = ports.ephemeral_range()
    assert ephemeral is not None
    assert len(set(reserved)) == 50
    assert not [port for port in reserved if ephemeral[0] <= port <= ephemeral[1]]
    low, high = ports.DEFAULT_PORT_RANGE
    assert all(low <= port <= high for port in reserved)


def test_a_port_held_by_one_run_is_never_handed_to_another_until_released(reserved: list[int]) -> None:
    port = reserve_port()
    reserved.append(port)
    refused = reserve_in_child(f"{port}-{port}")
    assert refused.returncode != 0
    assert f"no free port in {port}-{port}" in refused.stderr

    release_ports([port])
    granted = reserve_in_child(f"{port}-{port}")
    assert granted.returncode == 0, granted.stderr
    assert granted.stdout.strip() == str(port)


def test_a_port_something_listens_on_is_skipped(reserved: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    first = reserve_port()
    release_ports([first])
    with occupy(first):
        monkeypatch.setenv(PORT_RANGE_ENV, f"{first}-{first + 1}")
        monkeypatch.setattr(ports, "ephemeral_range", lambda: None)
        reserved.append(reserve_port())
    assert reserved == [first + 1]


@pytest.mark.parametrize("value", ["20000", "20000-", "a-b", "30000-20000", "80-90", "20000-70000"])
def test_a_bad_port_range_is_refused_with_the_variable_named(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PORT_RANGE_ENV, value)
    with pytest.raises(ValueError, match=f"{PORT_RANGE_ENV} must be LOW-HIGH within 1024-65535"):
        reserve_port()


def test_an_exhausted_range_says_which_and_what_to_set(
    reserved: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = reserve_port()
    reserved.append(port)
    monkeypatch.setenv(PORT_RANGE_ENV, f"{port}-{port}")
    with pytest.raises(NoFreePort, match=f"no free port in {port}-{port} \\(set {PORT_RANGE_ENV}"):
        reserve_port()


def start_server(processes: ProcessGroup) -> int:
    """The SERVER child on a reserved port, waited for until it listens; returns the port."""
    (port,) = processes.reserve_ports(1)
    child = processes.start("server", [sys.executable, "-c", SERVER, str(port)])
    wait_for(
        lambda: "listening" in child.log_tail(), 30, "the server to listen", also_check=raise_if_exited(child)
    )
    return port


class TakePorts:
    """Wraps ``ProcessGroup.reserve_ports``: on the calls numbered in ``calls`` (from 1), the first
    port chosen is taken by another program right away, before the child can bind it (the race)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, calls: set[int]) -> None:
        self.taken: list[socket.socket] = []
        self.calls = 0
        original = ProcessGroup.reserve_ports

        def reserve_and_take(group: ProcessGroup, count: int) -> tuple[int, ...]:
            chosen = original(group, count)
            self.calls += 1
            if self.calls in calls:
                self.taken.append(occupy(chosen[0]))
            return chosen

        monkeypatch.setattr(ProcessGroup, "reserve_ports", reserve_and_take)

    def ports(self) -> list[int]:
        return [squatter.getsockname()[1] for squatter in self.taken]

    def close(self) -> None:
        for squatter in self.taken:
            squatter.close()


def test_a_child_whose_port_was_taken_is_started_again_on_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    taker = TakePorts(monkeypatch, calls={1, 2})
    caplog.set_level(logging.WARNING, logger="localcluster.host.processes")
    try:
        with ProcessGroup(log_dir=tmp_path) as processes:
            port = processes.retry_on_address_in_use(lambda: start_server(processes), "the server")
            assert port not in taker.ports()
            assert len(processes.processes) == 1  # the two failed children are forgotten
    finally:
        taker.close()
    assert len(taker.taken) == 2
    assert [record.getMessage() for record in caplog.records] == [
        "the server: a port was taken before it could bind it; starting it again on fresh ports "
        f"(attempt {attempt} of 5)"
        for attempt in (2, 3)
    ]


def test_the_attempts_are_bounded_and_the_last_error_carries_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taker = TakePorts(monkeypatch, calls={1, 2, 3})
    try:
        with ProcessGroup(log_dir=tmp_path) as processes, pytest.raises(AddressInUse) as raised:
            processes.retry_on_address_in_use(lambda: start_server(processes), "the server", attempts=3)
    finally:
        taker.close()
    assert "Address already in use" in str(raised.value)


def test_another_startup_failure_is_not_retried(tmp_path: Path) -> None:
    calls = []

    def start() -> None:
        calls.append(1)
        child = processes.start("failing", [sys.executable, "-c", "raise SystemExit('bad flag')"])
        wait_for(lambda: False, 30, "never", also_check=raise_if_exited(child))

    with ProcessGroup(log_dir=tmp_path) as processes, pytest.raises(StartupError) as raised:
        processes.retry_on_address_in_use(start, "failing")
    assert not isinstance(raised.value, AddressInUse)
    assert calls == [1]


def test_the_control_plane_starts_when_its_chosen_ports_are_taken_first(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """etcd's client port and then kube-apiserver's port are each occupied right after being chosen:
    both are started again on fresh ports, and the cluster answers."""
    taker = TakePorts(monkeypatch, calls={1, 3})  # etcd's first try, kube-apiserver's first try
    caplog.set_level(logging.WARNING, logger="localcluster.host.processes")
    try:
        with start_control_plane(bin_dir, tmp_path) as plane:
            assert plane.apiserver.running()
            api_port = int(plane.server.rsplit(":", 1)[1])
            assert api_port not in taker.ports()
            version = plane.api_client().call_api("/version", "GET", response_type="object")[0]
            assert version["major"] == "1"
    finally:
        taker.close()
    messages = [record.getMessage() for record in caplog.records]
    assert [message.split(":")[0] for message in messages] == ["etcd", "kube-apiserver"]
