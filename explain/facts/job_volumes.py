"""The PersistentVolumes a job's members mount, and the node affinity that holds each member to
its volume's zone, as JobZone reads them (plugin/jobzone/volume_zones.go).

An EBS volume lives in one Availability Zone and its PersistentVolume's required node affinity
says which, so a member mounting it can run only there. A claim not yet bound (a
WaitForFirstConsumer class chooses the zone at binding) or not found adds nothing.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from explain.facts.node_facts import JsonObject

ClaimReader = Callable[[str, str], JsonObject | None]
"""The PersistentVolumeClaim of a namespace and name; None when there is none."""
VolumeReader = Callable[[str], JsonObject | None]
"""The PersistentVolume of a name; None when there is none."""


@dataclass(frozen=True)
class VolumeReads:
    """How ``explain pod`` reads claims and volumes (the API, or JSON objects in tests)."""

    claim: ClaimReader
    volume: VolumeReader


NO_VOLUMES = VolumeReads(claim=lambda _namespace, _name: None, volume=lambda _name: None)
"""Reads that find nothing: every claim counts as unbound."""


def volume_reads(objects: Iterable[JsonObject]) -> VolumeReads:
    """Reads over PersistentVolumeClaim and PersistentVolume objects held in memory."""
    claims: dict[tuple[str, str], JsonObject] = {}
    volumes: dict[str, JsonObject] = {}
    for item in objects:
        metadata = item.get("metadata") or {}
        if item.get("kind") == "PersistentVolumeClaim":
            claims[(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))] = item
        elif item.get("kind") == "PersistentVolume":
            volumes[str(metadata.get("name") or "")] = item
    return VolumeReads(claim=lambda namespace, name: claims.get((namespace, name)), volume=volumes.get)


@dataclass(frozen=True)
class BoundVolume:
    """A claim the pod mounts, bound to a PersistentVolume with required node affinity."""

    claim: str
    volume: str
    terms: tuple[Any, ...]
    """The volume's required node selector terms (ORed)."""


def claim_names(pod: JsonObject) -> tuple[str, ...]:
    """The claims the pod mounts, in its volumes' order."""
    return tuple(
        str(claim.get("claimName") or "")
        for volume in (pod.get("spec") or {}).get("volumes") or ()
        if isinstance(volume, dict) and isinstance(claim := volume.get("persistentVolumeClaim"), dict)
    )


def bound_volumes(pod: JsonObject, reads: VolumeReads) -> tuple[BoundVolume, ...]:
    """Every claim the pod mounts that is bound to a PersistentVolume with required node affinity."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    found = []
    for name in claim_names(pod):
        claim = reads.claim(namespace, name) if name else None
        volume_name = str(((claim or {}).get("spec") or {}).get("volumeName") or "")
        volume = reads.volume(volume_name) if volume_name else None
        affinity = ((volume or {}).get("spec") or {}).get("nodeAffinity") or {}
        required = affinity.get("required") if isinstance(affinity, dict) else None
        if isinstance(required, dict):
            found.append(BoundVolume(name, volume_name, tuple(required.get("nodeSelectorTerms") or ())))
    return tuple(found)
