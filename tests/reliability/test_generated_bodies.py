"""10,000+ generated bodies: no 5xx, no crash, and the extender still serves afterwards.

Most go through the verbs in-process (the request path behind the HTTP layer: parsing,
the policy, encoding); a few hundred go over mutual TLS on one keep-alive connection to
the real ``python -m extender_app``, as kube-scheduler would send them.
"""

from http import HTTPStatus

import msgspec
import pytest

from extender_app.verbs.handlers import VerbLimits, filter_verb, prioritize_verb
from policy import PolicySettings
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from tests.reliability.body_generator import CATEGORIES, BodyGenerator
from tests.reliability.extender_process import extender_process

IN_PROCESS_BODIES = 10_000
OVER_TLS_BODIES = 300
MAX_NODES = 4
"""Low, so that bodies with five nodes are refused 413 (the too-many-nodes path is exercised)."""
ANSWERS = {HTTPStatus.OK, HTTPStatus.BAD_REQUEST, HTTPStatus.REQUEST_ENTITY_TOO_LARGE}


@pytest.fixture(scope="module")
def generator() -> BodyGenerator:
    return BodyGenerator()


def check_answer(status: int, body: bytes, valid: bool, what: str) -> None:
    assert status in ANSWERS, f"{what}: status {status}: {body[:200]!r}"
    assert body, what
    if status == HTTPStatus.OK:
        msgspec.json.decode(body, type=msgspec.Raw)  # one well-formed JSON document
    else:
        assert b"\n" not in body.rstrip(b"\n"), what
    if valid:
        assert status in (HTTPStatus.OK, HTTPStatus.REQUEST_ENTITY_TOO_LARGE), f"{what}: {body[:200]!r}"


def test_every_generated_body_is_answered_in_process(generator):
    limits = VerbLimits(max_nodes=MAX_NODES, policy=PolicySettings())
    seen: dict[tuple[str, int], int] = {}
    for item in generator.bodies(IN_PROCESS_BODIES):
        verb = filter_verb if item.seed % 2 else prioritize_verb
        result = verb(item.body, limits)
        check_answer(result.status, result.body, item.valid, f"{item.category} seed {item.seed}")
        key = (item.category, int(result.status))
        seen[key] = seen.get(key, 0) + 1
    # each category produced both answers it can produce (the generator is not vacuous)
    assert {category for category, status in seen if status == HTTPStatus.OK} >= {"valid", "odd_encoding"}
    assert {category for category, status in seen if status == HTTPStatus.BAD_REQUEST} == set(CATEGORIES) - {
        "valid"
    }
    assert seen.get(("valid", int(HTTPStatus.REQUEST_ENTITY_TOO_LARGE)), 0) > 0


def test_generated_bodies_over_tls_then_the_process_still_serves(generator, tmp_path):
    with extender_process(tmp_path, f"--max-nodes={MAX_NODES}") as server:
        connection = server.connection()
        first_seed = IN_PROCESS_BODIES  # other bodies than the in-process test's
        for item in generator.bodies(OVER_TLS_BODIES, first_seed=first_seed):
            path = "/filter" if item.seed % 2 else "/prioritize"
            connection.request("POST", path, body=item.body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            body = response.read()
            check_answer(response.status, body, item.valid, f"{item.category} seed {item.seed}")
            if response.getheader("connection", "").lower() == "close":
                connection.close()
                connection = server.connection()
        connection.close()

        assert server.healthy()
        fresh = server.connection()
        fresh.request("POST", "/filter", body=extender_body(make_pod(min_memory_mib=40960), make_nodes(4)))
        reply = fresh.getresponse()
        assert reply.status == HTTPStatus.OK
        assert len(msgspec.json.decode(reply.read())["Nodes"]["items"]) == 1  # the g6e of four types
        fresh.close()
