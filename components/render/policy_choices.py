"""The policy's choices a stack makes, as one value: read once from the stack configuration and
handed whole to every renderer. It renders itself as each consumer takes it (the plugins'
``pluginConfig``, the extender's flags, the webhook's flags), so a new choice is a field here and
a line in each rendering, not an argument threaded through every component.

A pure module (no Pulumi import), shared with the local run and the tests.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from components.render.ec2_catalogue import snapshot_gpu_memory_table
from contracts.server import flag
from policy import (
    CAPACITY_CHOICES,
    SCORING_STRATEGIES,
    SCORING_STRATEGY,
    VENDOR_MEMORY_LABELS,
    PolicySettings,
    ScoringStrategy,
)
from policy.capacity_type import CapacityChoice
from policy.job_zone import JOB_SIZE_LIMIT, MAX_JOB_SIZE
from policy.setting_text import label_list_text, table_text

PLUGIN_NAME = "GPUScheduler"
"""Plugin mode: the GPU-memory rule's plugin."""
CAPACITY_PLUGIN_NAME = "CapacityType"
"""Plugin mode: the capacity-type rule's plugin (on-demand or spot as the pod's choice)."""
JOB_ZONE_PLUGIN = "JobZone"
"""Plugin mode: keeps each same-zone job in one zone chosen for the whole job (plugin/jobzone)."""

PERMIT_TIMEOUT_SECONDS = 15 * 60
"""JobZone's ``permitTimeout``: how long a job's members are held for the rest (longer than a GPU
node launch; kube-scheduler caps any Permit wait at 15 minutes)."""
MAX_PERMIT_TIMEOUT_SECONDS = 15 * 60
FAILED_ZONE_SECONDS = 10 * 60
"""JobZone's ``failedZoneDuration``: how long a zone where a job timed out is skipped for that job."""
MAX_FAILED_ZONE_SECONDS = 24 * 3600


@dataclass(frozen=True)
class JobZoneArgs:
    """Same-zone jobs: JobZone's pluginConfig args (plugin mode); the webhook admits jobs up to
    ``max_job_size`` in every mode."""

    permit_timeout_seconds: int = PERMIT_TIMEOUT_SECONDS
    failed_zone_seconds: int = FAILED_ZONE_SECONDS
    max_job_size: int = MAX_JOB_SIZE

    def __post_init__(self) -> None:
        for name, high in (
            ("permit_timeout_seconds", MAX_PERMIT_TIMEOUT_SECONDS),
            ("failed_zone_seconds", MAX_FAILED_ZONE_SECONDS),
            ("max_job_size", JOB_SIZE_LIMIT),
        ):
            if not 1 <= getattr(self, name) <= high:
                raise ValueError(f"job zone {name} must be 1..{high}")

    def render(self) -> dict[str, Any]:
        """The args as the plugin reads them."""
        return {
            "permitTimeout": f"{self.permit_timeout_seconds}s",
            "failedZoneDuration": f"{self.failed_zone_seconds}s",
            "maxJobSize": self.max_job_size,
        }


@dataclass(frozen=True)
class PolicyChoices:
    """What the stack chose of the policy: the GPU-memory rule's scoring strategy and where it
    reads a node's memory (the vendor labels, the instance-type table), the capacity-type rule's
    default, the same-zone jobs' timeouts and size."""

    scoring_strategy: ScoringStrategy = SCORING_STRATEGY
    """How GPU pods rank the nodes that fit."""
    default_capacity_type: CapacityChoice | Literal[""] = ""
    """The capacity-type choice of a pod of the custom scheduler without the annotation ("" for
    none)."""
    job_zone: JobZoneArgs = field(default_factory=JobZoneArgs)
    vendor_memory_labels: tuple[str, ...] = VENDOR_MEMORY_LABELS
    """The per-GPU MiB labels read, in order, on a node without ours."""
    instance_type_gpu_memory_mib: Mapping[str, int] = field(default_factory=snapshot_gpu_memory_table)
    """Instance type -> MiB per GPU, for a node with none of the labels: EC2's GPU data."""

    def __post_init__(self) -> None:
        memory = PolicySettings(
            vendor_memory_labels=self.vendor_memory_labels,
            instance_type_gpu_memory_mib=self.instance_type_gpu_memory_mib,
        )
        object.__setattr__(self, "vendor_memory_labels", memory.vendor_memory_labels)
        object.__setattr__(self, "instance_type_gpu_memory_mib", memory.instance_type_gpu_memory_mib)
        if self.scoring_strategy not in SCORING_STRATEGIES:
            choices = ", ".join(SCORING_STRATEGIES)
            raise ValueError(f"scoring strategy must be one of {choices}, not {self.scoring_strategy!r}")
        if self.default_capacity_type and self.default_capacity_type not in CAPACITY_CHOICES:
            choices = ", ".join(CAPACITY_CHOICES)
            raise ValueError(
                f"default capacity type must be empty or one of {choices}, not {self.default_capacity_type!r}"
            )

    def _default_flag(self) -> list[str]:
        if not self.default_capacity_type:
            return []
        return [flag("default_capacity_type", self.default_capacity_type)]

    def _memory_args(self) -> dict[str, Any]:
        """Where GPUScheduler and JobZone read a node's memory, as their args."""
        return {
            "vendorMemoryLabels": list(self.vendor_memory_labels),
            "instanceTypeGPUMemoryMiB": dict(self.instance_type_gpu_memory_mib),
        }

    def _memory_flags(self) -> list[str]:
        """Where the extender and the webhook read a node's memory, as their flags."""
        return [
            flag("vendor_memory_labels", label_list_text(self.vendor_memory_labels)),
            flag("instance_type_gpu_memory_mib", table_text(self.instance_type_gpu_memory_mib)),
        ]

    def plugin_config(self) -> list[dict[str, Any]]:
        """Plugin mode's ``pluginConfig``: GPUScheduler's, CapacityType's (with a default choice)
        and JobZone's args."""
        gpu_args = {"scoringStrategy": self.scoring_strategy, **self._memory_args()}
        args: list[tuple[str, dict[str, Any]]] = [(PLUGIN_NAME, gpu_args)]
        job_zone_args = {**self.job_zone.render(), **self._memory_args()}
        if self.default_capacity_type:
            args.append((CAPACITY_PLUGIN_NAME, {"defaultChoice": self.default_capacity_type}))
            job_zone_args["defaultCapacityChoice"] = self.default_capacity_type
        args.append((JOB_ZONE_PLUGIN, job_zone_args))
        return [{"name": name, "args": plugin_args} for name, plugin_args in args]

    def extender_flags(self) -> list[str]:
        """The extender's flags for these choices (both extender modes)."""
        return [flag("scoring_strategy", self.scoring_strategy), *self._memory_flags(), *self._default_flag()]

    def webhook_flags(self) -> list[str]:
        """The webhook's flags for these choices (every mode)."""
        size = flag("max_job_size", self.job_zone.max_job_size)
        return [size, *self._memory_flags(), *self._default_flag()]


DEFAULT_POLICY_CHOICES = PolicyChoices()
"""The policy's defaults: prefer-larger, the vendor labels and EC2's instance-type table, no default
capacity-type choice, JobZone's defaults."""
