"""When each pod was bound, seen through a watch on the API server (raw JSON lines, no client models)."""

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import kubernetes.client
import orjson

WATCH_TIMEOUT_SECONDS = 1800
STREAM_CHUNK_BYTES = 64 * 1024
MAX_RESTARTS = 20


class BindWatch:
    """Watches the pods of a namespace and records the monotonic time each first shows a node."""

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str) -> None:
        self._core = kubernetes.client.CoreV1Api(api)
        self._namespace = namespace
        self.bound_at: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._stopped = False
        self._response: Any = None
        self.error: BaseException | None = None
        self.ended = False
        self.restarts = 0
        """How often the watch was resumed (binds seen after a resume may be timed a little late)."""
        self._resource_version: str | None = None

    def start(self) -> "BindWatch":
        self._open()
        self._thread.start()
        return self

    def _open(self) -> None:
        self._response = self._core.list_namespaced_pod(
            self._namespace,
            watch=True,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            resource_version=self._resource_version,
            _preload_content=False,
        )

    def _run(self) -> None:
        try:
            while not self._stopped:
                self._follow()
                if self._stopped or self.restarts >= MAX_RESTARTS:
                    return
                self.restarts += 1  # the API server may close a watch it finds slow; resume it
                self._open()
        except Exception as error:  # reported to the waiter, unless we stopped it
            if not self._stopped:
                self.error = error
        finally:
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def _follow(self) -> None:
        pending = b""
        for chunk in self._response.stream(STREAM_CHUNK_BYTES):
            seen = time.monotonic()
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if line.strip():
                    self._record(orjson.loads(line), seen)

    def _record(self, event: dict[str, Any], seen: float) -> None:
        pod = event.get("object") or {}
        version = (pod.get("metadata") or {}).get("resourceVersion")
        if version:
            self._resource_version = version
        node = (pod.get("spec") or {}).get("nodeName")
        name = (pod.get("metadata") or {}).get("name")
        if node and name:
            with self._changed:
                if name not in self.bound_at:
                    self.bound_at[name] = seen
                    self.nodes[name] = node
                    self._changed.notify_all()

    def wait_for(self, count: int, timeout: float, alive: Callable[[], bool]) -> bool:
        """Wait until ``count`` pods are bound; False on timeout, if ``alive()`` fails or the watch ended."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.bound_at) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not alive() or self.ended:
                    return False
                self._changed.wait(min(remaining, 1.0))
        return True

    def stop(self) -> None:
        self._stopped = True
        if self._response is not None:
            with contextlib.suppress(RuntimeError):  # already released: the stream had ended
                self._response.shutdown()  # unblocks the reading thread
            self._response.release_conn()
        self._thread.join(timeout=5)
