"""The small validation library every section parser uses: a value with the key path that names
it in errors (``Value``), an object's fields (``Fields``), and the patterns several sections share.
"""

import ipaddress
import re
from collections.abc import Callable, Iterable
from typing import Any, NoReturn, TypeVar

from policy import PolicyError, parse_quantity
from policy.setting_schema import SettingError, StackSetting

PROJECT = "gpu-scheduler-eks"
"""The Pulumi project name (Pulumi.yaml) and so the namespace of every key below."""
CHART_VERSION_PATTERN = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
IMAGE_REFERENCE = re.compile(r"[a-z0-9][a-z0-9._/:-]*[a-z0-9](@sha256:[0-9a-f]{64})?")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
"""A Kubernetes label value: empty, or at most 63 such characters."""


class StackConfigError(ValueError):
    """A configuration value that the program cannot use; the message names the key.

    It never quotes a secret value (the kubeconfig): only where and what is wrong with it.
    """


class Value:
    """A configuration value and the key path that names it in errors."""

    def __init__(self, path: str, raw: object) -> None:
        self.path = path
        self.raw = raw

    def fail(self, problem: str) -> NoReturn:
        raise StackConfigError(f"{PROJECT}:{self.path}: {problem}")

    def fields(self, known: frozenset[str] | set[str]) -> "Fields":
        if not isinstance(self.raw, dict):
            self.fail(f"must be an object with keys {', '.join(sorted(known))}")
        for key in sorted(set(self.raw) - known):
            self.fail(f"unknown key {key!r}; known keys: {', '.join(sorted(known))}")
        return Fields({key: Value(f"{self.path}.{key}", value) for key, value in self.raw.items()})

    def items(self) -> list["Value"]:
        if not isinstance(self.raw, list):
            self.fail("must be a list")
        return [Value(f"{self.path}[{index}]", value) for index, value in enumerate(self.raw)]

    def string(self, pattern: re.Pattern[str] | None = None, description: str = "") -> str:
        if not isinstance(self.raw, str) or not self.raw:
            self.fail("must be a non-empty string")
        if pattern is not None and not pattern.fullmatch(self.raw):
            self.fail(f"{self.raw!r} is not valid: {description}")
        return self.raw

    def integer(self, low: int, high: int) -> int:
        value = self.raw
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,12}", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"must be an integer, not {self.raw!r}")
        if not low <= value <= high:
            self.fail(f"must be {low}..{high}, not {value}")
        return value

    def boolean(self) -> bool:
        if isinstance(self.raw, bool):
            return self.raw
        if self.raw not in ("true", "false"):
            self.fail(f"must be true or false, not {self.raw!r}")
        return self.raw == "true"

    def choice(self, choices: Iterable[str]) -> Any:
        allowed = tuple(choices)
        if self.raw not in allowed:
            self.fail(f"must be one of {', '.join(allowed)}, not {self.raw!r}")
        return self.raw

    def string_list(self, pattern: re.Pattern[str], description: str, minimum: int = 1) -> tuple[str, ...]:
        values = tuple(item.string(pattern, description) for item in self.items())
        if len(values) < minimum:
            self.fail(f"must list at least {minimum}")
        if len(set(values)) != len(values):
            self.fail("must not repeat a value")
        return values

    def quantity(self) -> str:
        text = self.string()
        try:
            positive = parse_quantity(text) > 0
        except PolicyError:
            self.fail(f"{text!r} is not a Kubernetes quantity (e.g. 100m, 256Mi)")
        if not positive:
            self.fail(f"must be positive, not {text!r}")
        return text


_T = TypeVar("_T")


class Fields(dict[str, Value]):
    """An object's fields by key."""

    def read(self, key: str, default: _T, parse: Callable[[Value], _T]) -> _T:
        """``parse`` the field if it is set, else the default."""
        return parse(self[key]) if key in self else default

    def refuse_beside(self, present: str, keys: Iterable[str], why: str) -> None:
        """Fail on the first of ``keys`` that is set when ``present`` is: they exclude each other."""
        if present not in self:
            return
        for key in keys:
            if key in self:
                self[key].fail(f"{why}: remove one of the two")

    def require_together(self, keys: Iterable[str]) -> None:
        """Fail on the first of ``keys`` missing when another of them is set."""
        wanted = tuple(keys)
        given = [key for key in wanted if key in self]
        for key in wanted:
            if given and key not in self:
                self[given[0]].fail(f"needs {key} beside it ({', '.join(wanted)} go together)")


def parse_cidr_blocks(value: Value) -> tuple[str, ...]:
    blocks = tuple(item.string() for item in value.items())
    for index, block in enumerate(blocks):
        try:
            ipaddress.ip_network(block)
        except ValueError:
            Value(f"{value.path}[{index}]", block).fail(f"{block!r} is not a CIDR block such as 10.0.0.0/16")
    return blocks


def read_setting(fields: Fields, setting: StackSetting[_T]) -> _T:
    """A schema setting from the fields of its section: its default when unset, else the value as
    the schema checks it, a refusal naming the key."""
    if setting.key not in fields:
        return setting.default
    value = fields[setting.key]
    try:
        return setting.check(value.raw)
    except SettingError as error:
        value.fail(str(error))
