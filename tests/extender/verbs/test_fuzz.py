"""Property-based fuzzing of request bodies: every body gets 200, 400 or 413, never a crash or a 5xx."""

from collections.abc import Iterator, Sequence
from http import HTTPStatus

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender_app.verbs.handlers import VerbLimits, filter_verb, prioritize_verb
from policy import GPU_RESOURCE, MIN_MEMORY_ANNOTATION, NODE_MEMORY_LABEL, PolicySettings
from testbed.eks_nodes import make_nodes, make_pod
from testbed.extender import ThreadedExtender, request, scheduler_context, settings_for
from testbed.pki import make_pki

ANSWERS = {HTTPStatus.OK, HTTPStatus.BAD_REQUEST, HTTPStatus.REQUEST_ENTITY_TOO_LARGE}
LIMITS = VerbLimits(max_nodes=8, policy=PolicySettings())

KEYS = st.sampled_from(
    [
        "Pod",
        "pod",
        "POD",
        "Nodes",
        "nodes",
        "NodeNames",
        "nodeNames",
        "items",
        "Items",
        "metadata",
        "name",
        "namespace",
        "labels",
        "annotations",
        "spec",
        "containers",
        "initContainers",
        "resources",
        "requests",
        "overhead",
        "restartPolicy",
        NODE_MEMORY_LABEL,
        MIN_MEMORY_ANNOTATION,
        GPU_RESOURCE,
    ]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "1", "0", "-1", "40960", "1e3", "2Ki", "1.5", " 7", "Always", "abc", "1e999999"])
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(KEYS | st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=30,
)


@st.composite
def mutated_args(draw: st.DrawFn) -> bytes:
    """A realistic ExtenderArgs body with random parts replaced by random JSON."""
    document = {
        "Pod": make_pod(
            gpus=draw(st.integers(0, 2)), min_memory_mib=draw(st.none() | st.integers(-5, 2**21))
        ),
        "Nodes": {"metadata": {}, "items": make_nodes(draw(st.integers(0, 3)))},
        "NodeNames": None,
    }
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.lists(KEYS | st.integers(0, 3), min_size=1, max_size=6))
        _replace(document, path, draw(JSON_VALUES))
    return orjson.dumps(document)


def _replace(target: object, path: Sequence[object], value: object) -> None:
    for index, step in enumerate(path):
        last = index == len(path) - 1
        if isinstance(target, dict) and isinstance(step, str):
            if last or not isinstance(target.get(step), dict | list):
                target[step] = value
                return
            target = target[step]
        elif isinstance(target, list) and isinstance(step, int) and target:
            position = step % len(target)
            if last or not isinstance(target[position], dict | list):
                target[position] = value
                return
            target = target[position]
        else:
            return


BODIES = mutated_args() | JSON_VALUES.map(orjson.dumps) | st.binary(max_size=200)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=BODIES)
def test_verbs_answer_every_body(body):
    for verb in (filter_verb, prioritize_verb):
        result = verb(body, LIMITS)
        assert result.status in ANSWERS
        if result.status == HTTPStatus.OK:
            orjson.loads(result.body)
        else:
            assert b"\n" not in result.body
            assert result.body


@pytest.fixture(scope="module")
def shared_extender(tmp_path_factory) -> Iterator[ThreadedExtender]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    server = ThreadedExtender(settings_for(pki, max_nodes=8), pki).start()
    yield server
    server.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, path=st.sampled_from(["/filter", "/prioritize"]))
def test_server_answers_every_body_over_tls(shared_extender, body, path):
    reply = request(shared_extender.ports.port, scheduler_context(shared_extender.pki), path, body)
    assert reply.status in ANSWERS
    expected_type = "application/json" if reply.status == HTTPStatus.OK else "text/plain; charset=utf-8"
    assert reply.headers["content-type"] == expected_type
