"""Same answer: the shared policy vectors through extender-cached, end to end in-process.

For every vector in tests/vectors/policy_cases.json that has a node, the node is put into
a NodeCache by the code the watch uses (a PartialObjectMetadataList page decoded by
``page_from_json``, swapped in by ``NodeCache.replace``), and the pod is sent as a
names-only request to the real /filter and /prioritize verbs. The verdict, reason and
score must be the ones the vector expects (the Go plugin's tests assert the same file).

- ``error``: the pod is invalid; with --pod-error-status 200 the node is unresolvable with
  exactly that message and scores 0.
- ``decode_error: pod``: kube-scheduler could never send such a pod (Go cannot decode it);
  the node must not pass and must score 0.
- ``decode_error: node``: the API server could never serve such a node; the cache's
  decoding must refuse it.
- A node without a name is given one (the API server never serves a nameless object and a
  names-only request can only name a named node); its labels stay as the vector has them.
- A null pod is refused by the wire before the policy sees it (400 "Pod is required", as in
  ``--node-cache off``; kube-scheduler never sends one) instead of the policy's "missing pod".

The few vectors without a node (null node: "missing node", or no minimum) have no cached
counterpart: a name the cache does not know is answered as FailedNodes with "node not yet in
the extender's node cache".
"""

from http import HTTPStatus
from typing import Any

import orjson
import pytest

from extender_app.node_cache.cache import NodeCache
from extender_app.node_cache.metadata import NodeDecodeError, page_from_json
from extender_app.verbs.cached_handlers import cached_verbs
from extender_app.verbs.handlers import VerbLimits
from policy import PolicySettings, memory_labels
from tests.vectors import case_settings, load_cases

VECTORS = "policy_cases.json"
CASES = load_cases(VECTORS)
WITH_NODE = [case for case in CASES if case["node"] is not None]
NAMELESS = "node-without-a-name"
POD_REQUIRED = b"Pod is required"


def limits_for(case: dict[str, Any]) -> VerbLimits:
    """The verbs' limits with the case's policy settings (e.g. its scoring strategy)."""
    policy = PolicySettings(**case_settings(VECTORS, case))
    return VerbLimits(max_nodes=10, policy=policy, pod_error_status=HTTPStatus.OK)


def disagreement(case: dict[str, Any]) -> str:
    """Why extender-cached answers this vector otherwise than expected; "" when it agrees."""
    expect = case["expect"]
    limits = limits_for(case)
    try:
        cache = cache_from(case["node"], memory_labels(limits.policy))
    except NodeDecodeError as error:
        return "" if expect.get("decode_error") == "node" else f"node refused: {error}"
    if expect.get("decode_error") == "node":
        return "a node Go cannot decode was cached"
    (name,) = cache.labels
    body = orjson.dumps({"Pod": case["pod"], "Nodes": None, "NodeNames": [name]})
    verbs = cached_verbs(cache)
    filtered = verbs["/filter"](body, limits)
    scored = verbs["/prioritize"](body, limits)
    if case["pod"] is None:
        refused = (filtered.status, filtered.body, scored.status, scored.body)
        return "" if refused == (400, POD_REQUIRED, 400, POD_REQUIRED) else f"a null pod got {refused}"
    if filtered.status != HTTPStatus.OK or scored.status != HTTPStatus.OK:
        return f"statuses {filtered.status}/{scored.status}: {filtered.body!r}"
    answer = orjson.loads(filtered.body)
    got = (answer["NodeNames"], answer["FailedNodes"], answer["FailedAndUnresolvableNodes"])
    return compare(expect, name, got, orjson.loads(scored.body)[0]["Score"])


def cache_from(node: dict[str, Any], labels: tuple[str, ...]) -> NodeCache:
    """A cache holding ``node``, through the watch's own decoding (a metadata list page) and swap."""
    if not isinstance(node.get("metadata"), dict):
        node = {**node, "metadata": {"name": NAMELESS}}
    page = orjson.dumps(
        {"kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "1"}, "items": [node]}
    )
    listed = page_from_json(page, labels)
    cache = NodeCache(labels)
    cache.replace(listed.nodes, listed.resource_version, 0.0)
    return cache


def compare(expect: dict[str, Any], name: str, got: tuple[Any, Any, Any], score: int) -> str:
    """The filter answer (NodeNames, FailedNodes, FailedAndUnresolvableNodes) and score against ``expect``."""
    passed, failed, unresolvable = got
    if failed:
        return f"resolvable failure {failed}"
    if expect.get("decode_error") == "pod":
        ok = passed == [] and name in unresolvable and score == 0
        return "" if ok else f"a pod Go cannot decode got {got} / {score}"
    if expect.get("error"):
        want: tuple[list[str], dict[str, str], int] = ([], {name: expect["error"]}, 0)
        return "" if (passed, unresolvable, score) == want else f"got {got} / {score}, want {want}"
    verdict = (passed == [name], unresolvable.get(name, ""), score)
    want = (expect["fits"], expect["reason"], expect["extender_score"])
    return "" if verdict == want else f"got {verdict}, want {want}"


def test_extender_cached_agrees_with_every_shared_vector_that_has_a_node(capsys):
    disagreements = {case["name"]: why for case in WITH_NODE if (why := disagreement(case))}
    agreed = len(WITH_NODE) - len(disagreements)
    with capsys.disabled():
        print(f"\nextender-cached agrees on {agreed} of {len(WITH_NODE)} vectors (the ones with a node)")
    assert disagreements == {}
    nodeless = [case for case in CASES if case["node"] is None]
    assert all(case["expect"]["reason"] in ("", "missing node") for case in nodeless)
    assert len(nodeless) <= 4 < len(WITH_NODE)


@pytest.mark.parametrize("case", WITH_NODE, ids=lambda case: case["name"])
def test_vector(case):
    assert disagreement(case) == ""
