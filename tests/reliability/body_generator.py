"""Generated extender request bodies for the reliability suite: valid ones and every way to be wrong.

Deterministic (a seed per body), fast (built from pre-serialised pieces), and varied:
valid ExtenderArgs, truncations, values of the wrong type anywhere, numbers no machine
type holds, deep nesting, and odd encodings (BOMs, UTF-16, Latin-1, broken UTF-8, lone
surrogate escapes, NUL bytes, escaped key names, trailing data).
"""

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from policy import GPU_RESOURCE, MIN_MEMORY_ANNOTATION, NODE_MEMORY_LABEL
from testbed.eks_nodes import make_nodes, make_pod

CATEGORIES = ("valid", "truncated", "wrong_type", "huge_number", "deep_nesting", "odd_encoding")
MAX_DEPTH = 5000
"""Deepest nesting generated (Go's decoder allows 10,000; ours refuse from about 1,000)."""


@dataclass(frozen=True)
class GeneratedBody:
    category: str
    seed: int
    body: bytes
    valid: bool
    """True when the body is a well-formed request that must be answered 200."""


class BodyGenerator:
    """Bodies from a small pool of realistic and lean nodes and pods."""

    def __init__(self) -> None:
        realistic = make_nodes(6)
        lean = [
            {"metadata": {"name": f"lean-{index}", "labels": {NODE_MEMORY_LABEL: str(memory)}}}
            for index, memory in enumerate((16384, 22888, 40960, 81920, 144384))
        ]
        self.nodes: list[dict[str, Any]] = realistic + lean
        self.pods: list[dict[str, Any]] = [
            make_pod(min_memory_mib=minimum, gpus=gpus)
            for minimum in (None, 1, 16384, 40960, 200000)
            for gpus in (1, 2)
        ]
        self._makers: dict[str, Callable[[random.Random], tuple[bytes, bool]]] = {
            "valid": self._valid,
            "truncated": self._truncated,
            "wrong_type": self._wrong_type,
            "huge_number": self._huge_number,
            "deep_nesting": self._deep,
            "odd_encoding": self._odd_encoding,
        }

    def bodies(self, count: int, first_seed: int = 0) -> Iterator[GeneratedBody]:
        """``count`` bodies, cycling through the categories."""
        for seed in range(first_seed, first_seed + count):
            category = CATEGORIES[seed % len(CATEGORIES)]
            body, valid = self._makers[category](random.Random(seed))
            yield GeneratedBody(category, seed, body, valid)

    def _document(self, rng: random.Random) -> dict[str, Any]:
        nodes = rng.sample(self.nodes, rng.randint(0, 5))
        return {"Pod": rng.choice(self.pods), "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}

    def _valid(self, rng: random.Random) -> tuple[bytes, bool]:
        return orjson.dumps(self._document(rng)), True

    def _truncated(self, rng: random.Random) -> tuple[bytes, bool]:
        body = orjson.dumps(self._document(rng))
        return body[: rng.randrange(len(body))], False

    def _wrong_type(self, rng: random.Random) -> tuple[bytes, bool]:
        document = _copy(self._document(rng))
        wrong = rng.choice(WRONG_VALUES)
        _replace_somewhere(document, rng, wrong)
        return orjson.dumps(document), False

    def _huge_number(self, rng: random.Random) -> tuple[bytes, bool]:
        marker = "HUGE-NUMBER-MARKER"
        document = _copy(self._document(rng))
        target = rng.choice(["anywhere", "annotation", "label", "quantity"])
        if target == "annotation":
            document["Pod"].setdefault("metadata", {}).setdefault("annotations", {})[
                MIN_MEMORY_ANNOTATION
            ] = marker
        elif target == "label" and document["Nodes"]["items"]:
            document["Nodes"]["items"][0]["metadata"].setdefault("labels", {})[NODE_MEMORY_LABEL] = marker
        elif target == "quantity":
            document["Pod"]["spec"]["containers"][0]["resources"]["requests"][GPU_RESOURCE] = marker
        else:
            _replace_somewhere(document, rng, marker)
        number = rng.choice(HUGE_NUMBERS)
        return orjson.dumps(document).replace(b'"' + marker.encode() + b'"', number), False

    def _deep(self, rng: random.Random) -> tuple[bytes, bool]:
        depth = rng.choice([2, 50, 500, 999, 1000, 1024, 1025, 3000, MAX_DEPTH])
        opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
        nested = opener * depth + b"1" + closer * depth
        marker = "DEEP-MARKER"
        document = _copy(self._document(rng))
        _replace_somewhere(document, rng, marker)
        return orjson.dumps(document).replace(b'"' + marker.encode() + b'"', nested), False

    def _odd_encoding(self, rng: random.Random) -> tuple[bytes, bool]:
        body = orjson.dumps(self._document(rng))
        change, valid = rng.choice(ODD_ENCODINGS)
        return change(body, rng), valid


_BROKEN_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88")
ACCENTED = "\u00e9\u4e2d\U0001f680".encode()
ODD_ENCODINGS: tuple[tuple[Callable[[bytes, random.Random], bytes], bool], ...] = (
    (lambda body, _: b"\xef\xbb\xbf" + body, False),  # UTF-8 BOM
    (lambda body, _: body.decode().encode("utf-16"), False),  # with its BOM
    (lambda body, _: body.decode().encode("utf-16-be"), False),
    (lambda body, _: body.replace(b'"Pod"', '"P\u00f6d"'.encode("latin-1"), 1), False),
    (lambda body, rng: _insert(body, rng, rng.choice(_BROKEN_UTF8)), False),
    (lambda body, _: body.replace(b'"name":"', b'"name":"\\ud800', 1), False),  # lone surrogate escape
    (lambda body, rng: _insert(body, rng, b"\x00"), False),
    (lambda body, _: body.replace(b'"Pod"', b'"\\u0050od"', 1), True),  # an escaped key still names Pod
    (lambda body, _: body.replace(b'"trainer"', b'"trainer' + ACCENTED + b'"', 1), True),
    (lambda body, _: body.replace(b'","', b'" ,\r\n\t"', 5), True),  # whitespace between members
    (lambda body, rng: body + rng.choice([b"x", b"{}", b"\n{", b"\x00"]), False),  # trailing data
    (lambda body, _: body.replace(b":", b"\xe2\x80\x8b:", 1), False),  # zero-width space: not JSON whitespace
)


WRONG_VALUES: tuple[Any, ...] = (None, True, 0, -1, 1.5, "", "x", [], [None], {}, {"a": 1}, [[[]]])
HUGE_NUMBERS: tuple[bytes, ...] = (
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"123456789012345678901234567890123456789",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"1" + b"0" * 400,
    b"0.0000000000000000000000000000000001",
)


def _copy(document: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = orjson.loads(orjson.dumps(document))
    return copied


def _replace_somewhere(document: dict[str, Any], rng: random.Random, value: Any) -> None:
    """Replace the value at a random path (a random walk from the top) with ``value``."""
    target: Any = document
    for _ in range(rng.randint(1, 8)):
        if isinstance(target, dict) and target:
            key = rng.choice(list(target))
            if rng.random() < 0.3 or not isinstance(target[key], dict | list) or not target[key]:
                target[key] = value
                return
            target = target[key]
        elif isinstance(target, list) and target:
            index = rng.randrange(len(target))
            if rng.random() < 0.3 or not isinstance(target[index], dict | list) or not target[index]:
                target[index] = value
                return
            target = target[index]
        else:
            return
    if isinstance(target, dict):
        target[rng.choice(["metadata", "labels", "items", "spec", "x"])] = value


def _insert(body: bytes, rng: random.Random, piece: bytes) -> bytes:
    position = rng.randrange(len(body) + 1)
    return body[:position] + piece + body[position:]
