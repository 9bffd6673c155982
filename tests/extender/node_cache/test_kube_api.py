"""The kubernetes_asyncio side of the node cache against a scripted HTTP API server on loopback.

What the real kube-apiserver cannot be made to do on demand is scripted here: a 410 Gone
when a watch is opened, an ERROR event, a stream cut in the middle, a silent connection.
The real server is used in test_node_cache_cluster.py.
"""

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson
import pytest
import yaml
from aiohttp import web

from extender_app.node_cache import kube_api
from extender_app.node_cache.kube_api import LIST_ACCEPT, WATCH_ACCEPT, connect
from extender_app.node_cache.metadata import BOOKMARK, ERROR, MODIFIED, NodeMeta
from extender_app.node_cache.sync import NodeApiConfigError, NodeApiError, ResourceExpired
from localcluster.host.ports import reserve_port

KEY = "example.com/gpu-memory-mib"
TOKEN = "test-token-123"  # a made-up bearer token for the fake server

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def kubeconfig(path: Path, port: int) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": TOKEN}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
                "current-context": "fake",
            }
        )
    )
    return path


def run_against(tmp_path: Path, handler: Handler | None, scenario, *, timeout: float = 5.0):
    """Serve ``handler`` on a loopback port (None: nothing listens) and run ``scenario(api, seen)``."""
    seen: list[web.Request] = []

    async def main():
        port = reserve_port()
        runner = None
        if handler is not None:

            async def record(request: web.Request) -> web.StreamResponse:
                seen.append(request)
                return await handler(request)

            app = web.Application()
            app.router.add_get("/api/v1/nodes", record)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
        api = await connect(str(kubeconfig(tmp_path / "kubeconfig", port)), (KEY,), timeout)
        try:
            return await scenario(api, seen)
        finally:
            await api.close()
            if runner is not None:
                await runner.cleanup()

    return asyncio.run(main())


def partial(name, label, resource_version):
    return {
        "kind": "PartialObjectMetadata",
        "metadata": {"name": name, "resourceVersion": resource_version, "labels": {KEY: label}},
    }


def json_response(body, status=200):
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def test_list_asks_for_metadata_only_with_paging_and_the_token(tmp_path):
    async def handler(request):
        return json_response(
            {
                "kind": "PartialObjectMetadataList",
                "metadata": {"resourceVersion": "77", "continue": "next"},
                "items": [partial("a", "16384", "70")],
            }
        )

    async def scenario(api, seen):
        page = await api.list_nodes(2, "tok")
        request = seen[0]
        assert request.headers["Accept"] == LIST_ACCEPT
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        assert dict(request.query) == {"limit": "2", "continue": "tok"}
        return page

    page = run_against(tmp_path, handler, scenario)
    assert (page.nodes, page.resource_version, page.continue_token) == (
        [NodeMeta("a", f"{KEY}=16384", "70")],
        "77",
        "next",
    )


def test_watch_streams_events_line_by_line_until_the_server_ends_it(tmp_path):
    async def handler(request):
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(
            orjson.dumps({"type": "MODIFIED", "object": partial("a", "81920", "81")}) + b"\n\n"
        )
        await response.write(b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"90"}}}\n')
        await response.write_eof()
        return response

    async def scenario(api, seen):
        stream = await api.watch_nodes("80", 7)
        events = [event async for event in stream]
        await stream.close()
        request = seen[0]
        assert request.headers["Accept"] == WATCH_ACCEPT
        assert dict(request.query) == {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "7",
            "resourceVersion": "80",
        }
        return events

    events = run_against(tmp_path, handler, scenario)
    assert [(event.type, event.resource_version) for event in events] == [(MODIFIED, "81"), (BOOKMARK, "90")]
    assert events[0].node == NodeMeta("a", f"{KEY}=81920", "81")


def test_410_when_opening_a_watch_is_resource_expired_with_the_servers_message(tmp_path):
    async def handler(request):
        status = {
            "kind": "Status",
            "status": "Failure",
            "reason": "Expired",
            "message": "too old resource version: 5 (90)",
            "code": 410,
        }
        return json_response(status, 410)

    async def scenario(api, _seen):
        with pytest.raises(ResourceExpired, match=r"410 Gone: Expired: too old resource version: 5 \(90\)"):
            await api.watch_nodes("5", 7)

    run_against(tmp_path, handler, scenario)


def test_an_error_event_is_passed_on_for_the_loop_to_judge(tmp_path):
    async def handler(request):
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(
            b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"gone"}}\n'
        )
        await response.write_eof()
        return response

    async def scenario(api, _seen):
        stream = await api.watch_nodes("5", 7)
        return [event async for event in stream]

    (event,) = run_against(tmp_path, handler, scenario)
    assert (event.type, event.status.code, event.status.message) == (ERROR, 410, "gone")


def test_refusals_carry_the_status_and_message(tmp_path):
    async def handler(request):
        status = {
            "kind": "Status",
            "reason": "Forbidden",
            "message": 'nodes is forbidden: User "x" cannot list resource "nodes"',
            "code": 403,
        }
        return json_response(status, 403)

    async def scenario(api, _seen):
        with pytest.raises(
            NodeApiError, match="list: the API server answered 403 Forbidden: Forbidden: nodes is forbidden"
        ) as raised:
            await api.list_nodes(10, "")
        assert not isinstance(raised.value, ResourceExpired)

    run_against(tmp_path, handler, scenario)


def test_nothing_listening_is_a_clear_error(tmp_path):
    async def scenario(api, _seen):
        with pytest.raises(NodeApiError, match="list: cannot reach the API server"):
            await api.list_nodes(10, "")
        with pytest.raises(NodeApiError, match="watch: cannot reach the API server"):
            await api.watch_nodes("1", 5)

    run_against(tmp_path, None, scenario)


def test_a_stream_cut_in_the_middle_is_a_broken_watch(tmp_path):
    async def handler(request):
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(orjson.dumps({"type": "ADDED", "object": partial("a", "1", "2")}) + b"\n")
        request.transport.abort()  # no end of the chunked body
        return response

    async def scenario(api, _seen):
        stream = await api.watch_nodes("1", 5)
        iterator = aiter(stream)
        first = await anext(iterator)
        with pytest.raises(NodeApiError, match="watch broken"):
            await anext(iterator)
        return first

    assert run_against(tmp_path, handler, scenario).node.name == "a"


def test_a_silent_watch_is_given_up_after_its_timeout_plus_the_api_timeout(tmp_path):
    release = asyncio.Event()

    async def handler(request):
        response = web.StreamResponse()
        await response.prepare(request)
        await release.wait()  # says nothing, keeps the connection open
        return response

    async def scenario(api, _seen):
        stream = await api.watch_nodes("1", 1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(NodeApiError, match="watch broken"):
            await anext(aiter(stream))
        waited = loop.time() - started
        release.set()
        return waited

    assert run_against(tmp_path, handler, scenario, timeout=0.3) >= 1.0  # never before the server's own end


def test_credentials_that_cannot_be_loaded_are_a_configuration_error(tmp_path, monkeypatch):
    with pytest.raises(NodeApiConfigError, match=r"kubeconfig .*missing"):
        asyncio.run(connect(str(tmp_path / "missing"), (KEY,), 1.0))
    broken = tmp_path / "broken"
    broken.write_text("clusters: [")
    with pytest.raises(NodeApiConfigError, match="cannot load Kubernetes credentials"):
        asyncio.run(connect(str(broken), (KEY,), 1.0))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(NodeApiConfigError, match="in-cluster service account"):
        asyncio.run(kube_api.connect("", (KEY,), 1.0))
