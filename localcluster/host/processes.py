"""Child processes that never outlive the local cluster.

Each child gets its own process group and a parent-death signal, writes its output to a
log file, and is stopped with SIGTERM, then SIGKILL after a grace period. A
``ProcessGroup`` stops everything it started, in reverse order, however the run ends.
"""

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from localcluster.host.ports import release_ports, reserve_port

STOP_GRACE_SECONDS = 10.0
"""How long a child may take to exit after SIGTERM before it is killed."""

PORT_ATTEMPTS = 5
"""How many times a process that found its port taken is started on fresh ports."""

ADDRESS_IN_USE = "address already in use"
"""What Go (``bind: address already in use``) and Python (``[Errno 98] Address already in use``)
servers print, compared without case, when another program holds their port."""

T = TypeVar("T")
_log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGKILL the child if the parent dies (even by SIGKILL)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class ManagedProcess:
    """One running child and where its output goes."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log_start: int = 0
    """Where this child's output begins in ``log_path`` (a restart appends to the same file)."""

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The end of this child's output, for error messages."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self.log_start)
                text = log.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        """SIGTERM the child's process group, wait, then SIGKILL; returns the exit status."""
        if self.running():
            self._signal_group(signal.SIGTERM)
            self._signal_group(signal.SIGCONT)  # a stopped child acts on SIGTERM only once continued
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.popen.wait()
        return self.popen.returncode

    def kill(self) -> None:
        """SIGKILL at once (a crash, for failure tests)."""
        if self.running():
            self._signal_group(signal.SIGKILL)
            self.popen.wait()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signum)


@dataclass
class ProcessGroup:
    """Starts children and stops all of them, newest first, on exit or error."""

    log_dir: Path
    processes: list[ManagedProcess] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    """Ports reserved for this group's children, released when the group stops."""

    def reserve_ports(self, count: int) -> tuple[int, ...]:
        """``count`` distinct loopback ports no other process or run is handed (``host.ports``)."""
        reserved = tuple(reserve_port() for _ in range(count))
        self.ports.extend(reserved)
        return reserved

    def retry_on_address_in_use(self, start: Callable[[], T], what: str, attempts: int = PORT_ATTEMPTS) -> T:
        """Call ``start`` (which reserves its ports, starts a child and waits until it is ready)
        again, up to ``attempts`` times, while the child exits reporting its address in use.

        Ports come from ``reserve_ports``, so only a program outside the local cluster can take
        one first; each new attempt is logged.
        """
        for attempt in range(1, attempts + 1):
            try:
                return start()
            except AddressInUse as error:
                self.forget(error.process)
                if attempt == attempts:
                    raise
                _log.warning(
                    "%s: a port was taken before it could bind it; starting it again on fresh ports "
                    "(attempt %d of %d)",
                    what,
                    attempt + 1,
                    attempts,
                )
        raise AssertionError("unreachable: the last attempt returns or raises")

    def start(
        self, name: str, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> ManagedProcess:
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "ab") as log:
            log_start = log.tell()
            popen = subprocess.Popen(  # noqa: S603 - argv is built by this package, never by a shell
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, no locks taken
            )
        process = ManagedProcess(name=name, popen=popen, log_path=log_path, log_start=log_start)
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        while self.processes:
            self.processes.pop().stop()
        release_ports(self.ports)
        self.ports.clear()

    def forget(self, process: ManagedProcess) -> None:
        """Stop tracking a child that the caller stopped itself."""
        if process in self.processes:
            self.processes.remove(process)

    def __enter__(self) -> "ProcessGroup":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop_all()


def python_module_argv(module: str, *args: str) -> list[str]:
    """argv that runs ``python -m module`` with this interpreter (the project's venv)."""
    return [sys.executable, "-m", module, *args]


class StartupError(RuntimeError):
    """A component did not become ready; the message carries the end of its log."""


class AddressInUse(StartupError):
    """A child exited because another program held one of its ports."""

    def __init__(self, message: str, process: ManagedProcess) -> None:
        super().__init__(message)
        self.process = process


def raise_if_exited(process: ManagedProcess) -> Callable[[], None]:
    """A check for wait loops: fail fast, with the log, if the child has died
    (``AddressInUse`` when its log says a port was taken)."""

    def check() -> None:
        if not process.running():
            tail = process.log_tail()
            message = f"{process.name} exited with status {process.popen.returncode}:\n{tail}"
            if ADDRESS_IN_USE in tail.lower():
                raise AddressInUse(message, process)
            raise StartupError(message)

    return check
