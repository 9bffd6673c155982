"""What the node-cache tests need around a real control plane: a least-privilege identity for the
extender, Nodes to create and change, a TCP proxy that can make the API server vanish, a port
that accepts and never answers, and the real client with its watch events held back."""

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client

from extender_app.node_cache import kube_api
from extender_app.node_cache.metadata import NodeMeta, NodePage, WatchEvent
from localcluster.host.ports import reserve_port
from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane, Credentials, write_kubeconfig
from localcluster.services.custom_scheduler import grant_node_reader
from policy import NODE_MEMORY_LABEL, memory_labels

PROXY_CHUNK_BYTES = 64 * 1024


def node_reader(plane: ControlPlane) -> Credentials:
    """A client certificate for ``scheduler-extender`` with exactly get/list/watch on nodes (idempotent)."""
    return grant_node_reader(plane)


def kubeconfig_via(plane: ControlPlane, credentials: Credentials, port: int, path: Path) -> Path:
    """``credentials``' kubeconfig, but pointing at ``port`` on loopback (a proxy) instead."""
    write_kubeconfig(path, f"https://{LOOPBACK}:{port}", plane.ca.ca_file, credentials.files)
    return path


class Nodes:
    """Nodes a test creates (names get a per-test prefix), all deleted at the end."""

    def __init__(self, plane: ControlPlane, prefix: str) -> None:
        self.core = kubernetes.client.CoreV1Api(plane.api_client())
        self.prefix = prefix
        self.created: set[str] = set()

    def name(self, short: str) -> str:
        return f"{self.prefix}-{short}"

    def create(self, short: str, label: str | None) -> str:
        name = self.name(short)
        labels: dict[str, Any] = {"kubernetes.io/hostname": name}
        if label is not None:
            labels[NODE_MEMORY_LABEL] = label
        self.core.create_node({"metadata": {"name": name, "labels": labels}})
        self.created.add(name)
        return name

    def relabel(self, short: str, label: str | None) -> None:
        """Set the memory label (None removes it)."""
        self.core.patch_node(self.name(short), {"metadata": {"labels": {NODE_MEMORY_LABEL: label}}})

    def delete(self, short: str) -> None:
        self.core.delete_node(self.name(short))
        self.created.discard(self.name(short))

    def delete_all(self) -> None:
        for name in sorted(self.created):
            with contextlib.suppress(kubernetes.client.ApiException):
                self.core.delete_node(name)
        self.created.clear()


class TcpProxy:
    """Forwards a loopback port to the API server; ``stop`` closes the port and cuts every connection.

    The TLS session runs end to end through it (the API server's certificate names 127.0.0.1).
    """

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("https://").rsplit(":", 1)
        self.target = (host, int(port))
        self.port = reserve_port()
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.accepted = 0

    def start(self) -> "TcpProxy":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone leaves it listening)
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by stop()
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.update((client, upstream))
                self.accepted += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(PROXY_CHUNK_BYTES):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def proxy_to(plane: ControlPlane) -> Iterator[TcpProxy]:
    """A proxy to ``plane``'s API server that is not listening yet; stopped at the end."""
    proxy = TcpProxy(plane.server)
    try:
        yield proxy
    finally:
        proxy.stop()


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A loopback port that completes TCP connections (the kernel's backlog) and never says a word."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((LOOPBACK, 0))
        listener.listen(64)
        yield listener.getsockname()[1]
    finally:
        listener.close()


class HeldWatchApi:
    """The extender's real client (``kube_api``) to the real API server, with its watch held back.

    Lists (of Nodes and of a node's Pods) and GETs go straight through; watch events wait in the
    connection until ``release``. This is how a test puts the extender's watch behind
    kube-scheduler's informer on purpose (an autoscaler's new Node offered to the extender before
    its watch has delivered it), which in a live cluster happens by chance.
    """

    def __init__(self, kubeconfig: Path, request_timeout: float) -> None:
        self._kubeconfig = kubeconfig
        self._timeout = request_timeout
        self._api: kube_api.KubeNodeApi | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._released: asyncio.Event | None = None

    async def _real(self) -> kube_api.KubeNodeApi:
        if self._api is None:
            self._loop = asyncio.get_running_loop()
            self._released = asyncio.Event()
            self._api = await kube_api.connect(str(self._kubeconfig), memory_labels(), self._timeout)
        return self._api

    async def list_nodes(self, limit: int, continue_token: str) -> NodePage:
        return await (await self._real()).list_nodes(limit, continue_token)

    async def get_node(self, name: str, timeout: float) -> NodeMeta | None:
        return await (await self._real()).get_node(name, timeout)

    async def pods_on_node(self, node: str, timeout: float) -> list[dict[str, Any]]:
        return await (await self._real()).pods_on_node(node, timeout)

    async def watch_nodes(self, resource_version: str, timeout_seconds: int) -> "_HeldWatch":
        stream = await (await self._real()).watch_nodes(resource_version, timeout_seconds)
        assert self._released is not None
        return _HeldWatch(stream, self._released)

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()

    def release(self) -> None:
        """Let the watch deliver its events (called from the test's thread)."""
        assert self._loop is not None, "the extender has not used the client yet"
        assert self._released is not None
        self._loop.call_soon_threadsafe(self._released.set)


class _HeldWatch:
    def __init__(self, stream: kube_api.KubeWatch, released: asyncio.Event) -> None:
        self._stream = stream
        self._released = released

    def __aiter__(self) -> "_HeldWatch":
        return self

    async def __anext__(self) -> WatchEvent:
        await self._released.wait()
        return await self._stream.__anext__()

    async def close(self) -> None:
        await self._stream.close()
