"""What a pod asks of a GPU node: whether it requests GPUs, and how much memory each needs."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy.errors import PolicyError
from policy.integers import parse_go_int64
from policy.json_fields import map_entry, mapping_field
from policy.pod_requests import pod_requests
from policy.settings import DEFAULT_SETTINGS, MAX_GPU_MEMORY_MIB, PolicySettings

MISSING_POD = "missing pod"
INVALID_MIN_MEMORY = f"minimum GPU memory must be 1..{MAX_GPU_MEMORY_MIB} MiB"
REQUIRES_GPU_REQUEST = "minimum GPU memory requires a positive GPU request"


@dataclass(frozen=True)
class Requirement:
    """A pod's GPU requirement; ``min_memory_mib`` 0 means the pod declares no minimum."""

    has_gpu: bool
    min_memory_mib: int = 0


NO_REQUIREMENT = Requirement(has_gpu=False)


def requirement_from_pod(pod: object, settings: PolicySettings = DEFAULT_SETTINGS) -> Requirement:
    """Read the requirement from a pod as the API serves it (requests already defaulted).

    Raises PolicyError with ``MISSING_POD`` for a null pod, ``INVALID_MIN_MEMORY`` for an
    annotation that is not a base-10 integer in 1..1048576 (checked first), and
    ``REQUIRES_GPU_REQUEST`` for an annotation on a pod whose aggregated GPU request is
    not positive.
    """
    if pod is None:
        raise PolicyError(MISSING_POD)
    if not isinstance(pod, Mapping):
        raise PolicyError("pod must be an object")
    gpus = pod_requests(pod).get(settings.gpu_resource)
    has_gpu = gpus is not None and gpus > 0

    raw = _annotation(pod, settings.min_memory_annotation)
    if raw is None:
        return Requirement(has_gpu=has_gpu)
    minimum = parse_go_int64(raw)
    if minimum is None or not 1 <= minimum <= MAX_GPU_MEMORY_MIB:
        raise PolicyError(INVALID_MIN_MEMORY)
    if not has_gpu:
        raise PolicyError(REQUIRES_GPU_REQUEST)
    return Requirement(has_gpu=True, min_memory_mib=minimum)


def _annotation(pod: Mapping[str, Any], key: str) -> str | None:
    metadata = mapping_field(pod, "metadata", "pod")
    annotations = mapping_field(metadata, "annotations", "metadata")
    return map_entry(annotations, key, "metadata.annotations")
