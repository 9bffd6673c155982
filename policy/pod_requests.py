"""A pod's effective resource requests, as Kubernetes 1.35 computes them for scheduling.

A port of ``PodRequests`` in k8s.io/component-helpers/resource (v0.35) with default
options: regular containers are summed; a restartable init container (a sidecar,
``restartPolicy: Always``) is added to that sum and to the running total of sidecars;
every other init container needs its own requests plus the sidecars declared before it;
each resource is the larger of the sum and the largest init-container need; pod-level
``spec.resources.requests`` then replaces cpu, memory and hugepages-* (never extended
resources such as GPUs); finally ``spec.overhead`` is added.
"""

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from policy.errors import PolicyError
from policy.json_fields import element, list_field, mapping_field, optional_string
from policy.quantity import EXACT, parse_quantity

ResourceList = dict[str, Decimal]

SIDECAR_RESTART_POLICY = "Always"
"""The init-container restartPolicy that makes it a sidecar."""

POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"})
"""Resources pod-level requests may set, besides the hugepages-* family."""

HUGEPAGES_PREFIX = "hugepages-"


def pod_requests(pod: Mapping[str, Any]) -> ResourceList:
    """Return the pod's aggregated requests, exact, keyed by resource name.

    Raises PolicyError when a field on the way is of the wrong type or a quantity is
    malformed (where Go would fail to decode the pod at all).
    """
    if not isinstance(pod, Mapping):
        raise PolicyError("pod must be an object")
    spec = mapping_field(pod, "spec", "pod")
    requests = _aggregate_containers(spec)

    pod_level = _requests_of(spec, "spec")
    if any(_is_pod_level_resource(name) for name in pod_level):
        for name, quantity in pod_level.items():
            if _is_pod_level_resource(name):
                requests[name] = quantity

    overhead = _resource_list(mapping_field(spec, "overhead", "spec"), "spec.overhead")
    _add(requests, overhead)
    return requests


def _aggregate_containers(spec: Mapping[str, Any]) -> ResourceList:
    total: ResourceList = {}
    for index, raw in enumerate(list_field(spec, "containers", "spec")):
        where = f"spec.containers[{index}]"
        _add(total, _requests_of(element(raw, where), where))

    # An init container's need is its own requests plus every sidecar started before it (a
    # sidecar's: the sidecars up to and including it). Only the resources a container names can
    # set a new peak (a sidecar total it does not name peaked when it last grew), so each
    # container touches its own resources alone and the work stays linear in the pod.
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for index, raw in enumerate(list_field(spec, "initContainers", "spec")):
        where = f"spec.initContainers[{index}]"
        container = element(raw, where)
        own = _requests_of(container, where)
        if optional_string(container, "restartPolicy", where) == SIDECAR_RESTART_POLICY:
            _add(total, own)
            _add(sidecars, own)
            need = {name: sidecars[name] for name in own}
        else:
            need = {
                name: EXACT.add(quantity, sidecars[name]) if name in sidecars else quantity
                for name, quantity in own.items()
            }
        _max(init_peak, need)

    _max(total, init_peak)
    return total


def _requests_of(holder: Mapping[str, Any], where: str) -> ResourceList:
    """``holder.resources.requests`` of a container or a pod spec."""
    resources = mapping_field(holder, "resources", where)
    requests = mapping_field(resources, "requests", f"{where}.resources")
    return _resource_list(requests, f"{where}.resources.requests")


def _resource_list(raw: Mapping[str, Any], where: str) -> ResourceList:
    parsed: ResourceList = {}
    for name, value in raw.items():
        try:
            parsed[name] = parse_quantity(value)
        except PolicyError as error:
            raise PolicyError(f"{where}[{name!r}]: {error}") from None
    return parsed


def _is_pod_level_resource(name: str) -> bool:
    return name in POD_LEVEL_RESOURCES or name.startswith(HUGEPAGES_PREFIX)


def _add(into: ResourceList, other: ResourceList) -> None:
    for name, quantity in other.items():
        into[name] = EXACT.add(into.get(name, Decimal(0)), quantity)


def _max(into: ResourceList, other: ResourceList) -> None:
    for name, quantity in other.items():
        if name not in into or quantity > into[name]:
            into[name] = quantity
