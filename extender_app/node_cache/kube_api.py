"""The API server side of the node cache: list and watch Nodes with kubernetes_asyncio.

kubernetes_asyncio loads the credentials (a kubeconfig file, or the Pod's service account,
whose rotating token it re-reads) and makes the authenticated aiohttp requests. We ask for
full Nodes (the capacity-type rule reads the taints, in ``spec``, which metadata-only
objects lack), keep the bodies as bytes and decode them with ``node_metadata``, which builds
only the fields the rules read: the generated models are never built.
``CoreV1Api.list_node`` is not used because it overwrites the Accept header.

Imported only with ``--node-cache watch`` (the client library adds about 45 MiB to the process).
"""

import asyncio
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import aiohttp
import msgspec
import orjson
import yaml
from kubernetes_asyncio import client as kube_client
from kubernetes_asyncio import config as kube_config

from extender_app.node_cache.metadata import (
    NodeMeta,
    NodePage,
    WatchEvent,
    event_from_json,
    node_from_json,
    page_from_json,
)
from extender_app.node_cache.sync import EXPIRED_STATUS, NodeApiConfigError, NodeApiError, ResourceExpired

NODES_PATH = "/api/v1/nodes"
PODS_PATH = "/api/v1/pods"
POD_METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
"""Pods' metadata only (a victim's job is in its labels and annotations): a fraction of full Pods."""
LIST_ACCEPT = "application/json"
WATCH_ACCEPT = "application/json"
GET_ACCEPT = WATCH_ACCEPT
"""Full Nodes: their taints are in ``spec``."""
ERROR_BODY_BYTES = 4096
"""At most this much of an error answer is read, for its Status message."""

_TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError, OSError, ValueError)
"""How a request or a stream fails below HTTP (ValueError: a line over aiohttp's buffer limit)."""


class _Status(msgspec.Struct):
    reason: str = ""
    message: str = ""


_STATUS = msgspec.json.Decoder(_Status)


async def connect(kubeconfig: str, label_keys: tuple[str, ...], request_timeout: float) -> "KubeNodeApi":
    """A client from ``kubeconfig`` (a path) or, when empty, the in-cluster service account.

    Raises NodeApiConfigError when the credentials cannot be loaded. Nothing is sent yet.
    """
    configuration = kube_client.Configuration()
    try:
        if kubeconfig:
            await kube_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except (kube_config.ConfigException, yaml.YAMLError, OSError, ValueError, TypeError, KeyError) as error:
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster service account"
        raise NodeApiConfigError(f"cannot load Kubernetes credentials ({where}): {error}") from None
    return KubeNodeApi(kube_client.ApiClient(configuration), label_keys, request_timeout)


class KubeNodeApi:
    """``node_sync.NodeApi`` over a kubernetes_asyncio ApiClient."""

    def __init__(self, api_client: Any, label_keys: tuple[str, ...], request_timeout: float) -> None:
        self._client = api_client
        self._label_keys = label_keys
        self._timeout = request_timeout

    async def list_nodes(self, limit: int, continue_token: str) -> NodePage:
        """One page; the whole request (connect, answer, body) within the request timeout."""
        query = [("limit", str(limit))]
        if continue_token:
            query.append(("continue", continue_token))
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        body = await self._body(query, LIST_ACCEPT, timeout, "list")
        return page_from_json(body, self._label_keys)

    async def get_node(self, name: str, timeout: float) -> NodeMeta | None:
        """One Node's metadata, None when it does not exist (404); the whole request within ``timeout``.

        Raises NodeApiError when it cannot be read (unreachable, refused, timed out).
        """
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        path = f"{NODES_PATH}/{quote(name, safe='')}"
        try:
            body = await self._body([], GET_ACCEPT, client_timeout, "get", path)
        except _NotFound:
            return None
        return node_from_json(body, self._label_keys)

    async def pods_on_node(self, node: str, timeout: float) -> list[dict[str, Any]]:
        """The metadata of the pods bound to ``node`` (a ``spec.nodeName`` field selector), each as
        ``{"metadata": {...}}``; the whole request within ``timeout``.

        Raises NodeApiError when they cannot be read (needs list on core pods).
        """
        query = [("fieldSelector", f"spec.nodeName={node}")]
        client_timeout = aiohttp.ClientTimeout(total=timeout)
        body = await self._body(query, POD_METADATA_ACCEPT, client_timeout, "list pods", PODS_PATH)
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as error:
            raise NodeApiError(f"list pods: the answer is not JSON: {error}") from None
        items = document.get("items") if isinstance(document, dict) else None
        if not isinstance(items, list):
            raise NodeApiError("list pods: the answer has no items list")
        return [item for item in items if isinstance(item, dict)]

    async def watch_nodes(self, resource_version: str, timeout_seconds: int) -> "KubeWatch":
        """A watch with bookmarks that the server ends after ``timeout_seconds``.

        Connecting is bounded by the request timeout; so is silence beyond ``timeout_seconds``
        (a connection that died without a word is then given up and reported as broken).
        """
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
            ("resourceVersion", resource_version),
        ]
        timeout = aiohttp.ClientTimeout(
            connect=self._timeout, sock_connect=self._timeout, sock_read=timeout_seconds + self._timeout
        )
        response = await self._get(query, WATCH_ACCEPT, timeout, "watch")
        return KubeWatch(response, self._label_keys)

    async def close(self) -> None:
        """Close the client's connections."""
        await self._client.close()

    async def _body(
        self,
        query: list[tuple[str, str]],
        accept: str,
        timeout: aiohttp.ClientTimeout,
        what: str,
        path: str = NODES_PATH,
    ) -> bytes:
        """The body of one GET's answer, read within ``timeout``; NodeApiError when it cannot be."""
        response = await self._get(query, accept, timeout, what, path)
        try:
            return await response.read()
        except _TRANSPORT_ERRORS as error:
            raise NodeApiError(f"{what}: reading the answer failed: {_describe(error)}") from None
        finally:
            response.release()

    async def _get(
        self,
        query: list[tuple[str, str]],
        accept: str,
        timeout: aiohttp.ClientTimeout,
        what: str,
        path: str = NODES_PATH,
    ) -> aiohttp.ClientResponse:
        try:
            response: aiohttp.ClientResponse = await self._client.call_api(
                path,
                "GET",
                query_params=query,
                header_params={"Accept": accept},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        except _TRANSPORT_ERRORS as error:
            raise NodeApiError(f"{what}: cannot reach the API server: {_describe(error)}") from None
        if response.status == HTTPStatus.OK:
            return response
        if response.status == HTTPStatus.NOT_FOUND and path.startswith(f"{NODES_PATH}/"):
            response.close()
            raise _NotFound
        try:
            detail = await asyncio.wait_for(response.content.read(ERROR_BODY_BYTES), self._timeout)
        except _TRANSPORT_ERRORS:
            detail = b""
        finally:
            response.close()
        text = f"{what}: the API server answered {response.status} {response.reason or ''}".rstrip()
        status = _status_of(detail)
        if status:
            text += f": {status}"
        if response.status == EXPIRED_STATUS:
            raise ResourceExpired(text)
        raise NodeApiError(text)


class _NotFound(Exception):
    """404 on a single Node: it does not exist."""


class KubeWatch:
    """An accepted watch: one event per line until the server ends the stream."""

    def __init__(self, response: aiohttp.ClientResponse, label_keys: tuple[str, ...]) -> None:
        self._response = response
        self._label_keys = label_keys

    def __aiter__(self) -> "KubeWatch":
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            try:
                line = await self._response.content.readline()
            except _TRANSPORT_ERRORS as error:
                raise NodeApiError(f"watch broken: {_describe(error)}") from None
            if not line:
                raise StopAsyncIteration
            if line.strip():
                return event_from_json(line, self._label_keys)

    async def close(self) -> None:
        """Drop the connection (a watch is never read to its end)."""
        self._response.close()


def _status_of(body: bytes) -> str:
    try:
        status = _STATUS.decode(body)
    except msgspec.DecodeError:
        return body.decode(errors="replace").strip()[:200]
    return ": ".join(part for part in (status.reason, status.message) if part)


def _describe(error: BaseException) -> str:
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name
