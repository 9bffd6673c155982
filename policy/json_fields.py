"""Reading fields of decoded Kubernetes JSON with Go's type rules.

kube-scheduler decodes pods and nodes into typed Go structs, where JSON null and an
absent field both mean the zero value and a value of the wrong type fails the whole
decode. These readers do the same for the few fields the policy needs, and name the
field in the error. Keys are matched exactly, as Kubernetes writes them (Go's decoder
would also accept a struct key in another letter case; no Kubernetes component sends one).
"""

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from policy.errors import PolicyError


def mapping_field(obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """``obj[key]`` as an object or map; empty when absent or null."""
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(f"{where}.{key} must be an object")
    return value


def list_field(obj: Mapping[str, Any], key: str, where: str) -> Sequence[Any]:
    """``obj[key]`` as a list; empty when absent or null."""
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PolicyError(f"{where}.{key} must be a list")
    return value


def element(value: object, where: str) -> Mapping[str, Any]:
    """A list element that must be an object; null decodes to an empty struct."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(f"{where} must be an object")
    return value


def optional_string(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """A ``*string`` struct field: None when absent or null."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise PolicyError(f"{where}.{key} must be a string")


def map_entry(string_map: Mapping[str, Any], key: str, where: str) -> str | None:
    """An entry of a ``map[string]string`` (labels, annotations): None when absent.

    A null entry is present and empty, as Go stores the zero value under the key.
    """
    if key not in string_map:
        return None
    value = string_map[key]
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise PolicyError(f"{where}[{key!r}] must be a string")


def string_map(obj: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    """``obj[key]`` as a ``map[string]string`` (labels, annotations): empty when absent or null; a
    null entry is present and empty; any other value that is not a string is an error, as in Go's decode."""
    entries = mapping_field(obj, key, where)
    return {name: map_entry(entries, name, f"{where}.{key}") or "" for name in entries}


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:\d{2})", re.ASCII)


def time_value_is_set(value: object, where: str) -> bool:
    """The value of a ``*metav1.Time`` struct field (``where`` names it): whether it is set (null is not).

    A set value must be a string Go's ``time.Parse(time.RFC3339, ...)`` reads: date, time,
    optional fraction, ``Z`` or an offset, each part in range."""
    if value is None:
        return False
    if isinstance(value, str) and _RFC3339.fullmatch(value):
        zone = value[19:].lstrip(".,0123456789")
        try:
            datetime.fromisoformat(value[:19] + ("+00:00" if zone == "Z" else zone))
        except ValueError:
            pass
        else:
            return True
    raise PolicyError(f"{where} must be an RFC 3339 time")
