"""Same answer: the shared capacity-type vectors through both extender modes, in-process.

For every vector in tests/vectors/capacity_type_cases.json that has a node, the pod and node
go to the real /filter and /prioritize verbs: with the full Node in the request
(``--node-cache off``), and by name with the node in a NodeCache filled by the watch's own
decoding (``--node-cache watch``). The verdict and reason must be the vector's; the priority
must be the vector's capacity score combined with a memory score of 0 (the vectors' nodes have
no memory label) by ``handlers.priority``, the one documented combination of the two rules.

- ``error`` and ``decode_error: pod``: every candidate unresolvable (with the policy's message
  for ``error``), scored 0.
- ``decode_error: node``: the API server could never serve such a node: the cache's decoding
  refuses it, and a request carrying it is a 400.

The node cache reads the default capacity-type label (the extender has no setting for another
key), so the vectors that configure another node label are run with the full Node only.
"""

from http import HTTPStatus
from typing import Any

import orjson
import pytest

from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.metadata import NodeDecodeError, page_from_json
from extender_app.verbs.cached_handlers import cached_verbs
from extender_app.verbs.handlers import VERBS, VerbLimits, priority
from policy import CapacityTypeSettings, PolicySettings, memory_labels
from tests.vectors import case_settings, load_cases

OK = HTTPStatus.OK

VECTORS = "capacity_type_cases.json"
WITH_NODE = [case for case in load_cases(VECTORS) if case["node"] is not None and case["pod"] is not None]
DEFAULT_LABEL = [case for case in WITH_NODE if "node_label" not in case.get("settings", {})]


def limits_for(case: dict[str, Any]) -> VerbLimits:
    capacity = CapacityTypeSettings(**case_settings(VECTORS, case))
    return VerbLimits(
        max_nodes=10, policy=PolicySettings(), capacity=capacity, pod_error_status=HTTPStatus.OK
    )


def cached_answers(case: dict[str, Any], limits: VerbLimits) -> tuple[Any, Any] | str:
    page = orjson.dumps({"kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": [case["node"]]})
    try:
        listed = page_from_json(page, memory_labels(limits.policy))
    except NodeDecodeError as error:
        return str(error)
    cache = NodeCache(memory_labels(limits.policy))
    cache.replace(listed.nodes, listed.resource_version, 0.0)
    (name,) = cache.labels
    body = orjson.dumps({"Pod": case["pod"], "Nodes": None, "NodeNames": [name]})
    verbs = cached_verbs(cache)
    return verbs["/filter"](body, limits), verbs["/prioritize"](body, limits)


def full_answers(case: dict[str, Any], limits: VerbLimits) -> tuple[Any, Any]:
    body = orjson.dumps({"Pod": case["pod"], "Nodes": {"items": [case["node"]]}, "NodeNames": None})
    return VERBS["/filter"](body, limits), VERBS["/prioritize"](body, limits)


def disagreement(case: dict[str, Any], cached: bool) -> str:
    expect = case["expect"]
    limits = limits_for(case)
    answers = cached_answers(case, limits) if cached else full_answers(case, limits)
    if expect.get("decode_error") == "node":
        return refused_node(answers)
    if isinstance(answers, str):
        return f"node refused: {answers}"
    filtered, scored = answers
    if filtered.status != HTTPStatus.OK or scored.status != HTTPStatus.OK:
        return f"statuses {filtered.status}/{scored.status}: {filtered.body!r}"
    result = orjson.loads(filtered.body)
    name = case["node"]["metadata"]["name"]
    passed = name in (result.get("NodeNames") or []) or [
        item["metadata"]["name"] for item in (result.get("Nodes") or {}).get("items") or []
    ] == [name]
    unresolvable = result["FailedAndUnresolvableNodes"] or {}
    score = orjson.loads(scored.body)[0]["Score"]
    if result["FailedNodes"]:
        return f"resolvable failure {result['FailedNodes']}"
    if "decode_error" in expect or "error" in expect:
        message_ok = "error" not in expect or unresolvable.get(name) == expect["error"]
        ok = not passed and name in unresolvable and message_ok and score == 0
        return "" if ok else f"an invalid pod got {result} / {score}"
    verdict = (passed, unresolvable.get(name, ""), score)
    want = (expect["fits"], expect["reason"], priority(0, expect["score_100"], expect["choice"]))
    return "" if verdict == want else f"got {verdict}, want {want}"


def refused_node(answers: tuple[Any, Any] | str) -> str:
    """A node Go cannot decode: refused by the cache's decoding, or a 400 with the full Node."""
    if isinstance(answers, str):
        return ""
    status = answers[0].status
    return "" if status == HTTPStatus.BAD_REQUEST else f"a node Go cannot decode: filter answered {status}"


@pytest.mark.parametrize("cached", [False, True], ids=["node-cache-off", "node-cache-watch"])
def test_both_extender_modes_agree_with_every_capacity_vector_that_has_a_node(cached: bool, capsys) -> None:
    cases = DEFAULT_LABEL if cached else WITH_NODE
    disagreements = {case["name"]: why for case in cases if (why := disagreement(case, cached))}
    mode = "extender-cached" if cached else "extender"
    with capsys.disabled():
        print(f"\n{mode} agrees on {len(cases) - len(disagreements)} of {len(cases)} capacity-type vectors")
    assert disagreements == {}


@pytest.mark.parametrize(
    ("memory", "capacity", "choice", "expected"),
    [
        (100, 0, "", 10),
        (27, 100, "", 2),
        (0, 100, "spot", 6),
        (100, 100, "prefer-spot", 10),
        (100, 0, "spot", 3),
    ],
)
def test_the_priority_weighs_the_capacity_score_twice_the_memory_score(
    memory: int, capacity: int, choice: str, expected: int
) -> None:
    assert priority(memory, capacity, choice) == expected
