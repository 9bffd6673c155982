"""The policy's choices a stack makes, as one value: read once from the stack configuration and
handed whole to every renderer. It renders itself as each consumer takes it (the plugins'
``pluginConfig``, the extender's flags, the webhook's flags) from the schema of the settings
(``policy.setting_schema``): which plugin arg and which role's flag each setting becomes is
written there, once, so a new choice is a field here and a row in the schema.

A pure module (no Pulumi import), shared with the local run and the tests.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from contracts.server import flag
from policy import PolicySettings, ScoringStrategy
from policy.capacity_type import CapacityChoice
from policy.setting_schema import (
    DEFAULT_CAPACITY_TYPE_SETTING,
    FAILED_ZONE_SETTING,
    GPU_SCHEDULER_PLUGIN,
    JOB_ZONE_PLUGIN,
    MAX_JOB_SIZE_SETTING,
    PERMIT_TIMEOUT_SETTING,
    SCORING_STRATEGY_SETTING,
    STACK_SETTINGS,
    UNSET,
    VENDOR_MEMORY_LABELS_SETTING,
    FlagRole,
    SettingError,
    StackSetting,
)
from policy.setting_text import table_text
from render.ec2_catalogue import snapshot_gpu_memory_table


@dataclass(frozen=True)
class JobZoneArgs:
    """Same-zone jobs: JobZone's pluginConfig args (plugin mode); the webhook admits jobs up to
    ``max_job_size`` in every mode."""

    permit_timeout_seconds: int = PERMIT_TIMEOUT_SETTING.default
    failed_zone_seconds: int = FAILED_ZONE_SETTING.default
    max_job_size: int = MAX_JOB_SIZE_SETTING.default

    def __post_init__(self) -> None:
        for setting in (PERMIT_TIMEOUT_SETTING, FAILED_ZONE_SETTING, MAX_JOB_SIZE_SETTING):
            _check(setting, getattr(self, setting.field), "job zone")


@dataclass(frozen=True)
class PolicyChoices:
    """What the stack chose of the policy: the GPU-memory rule's scoring strategy and where it
    reads a node's memory (the vendor labels, the instance-type table), the capacity-type rule's
    default, the same-zone jobs' timeouts and size."""

    scoring_strategy: ScoringStrategy = SCORING_STRATEGY_SETTING.default
    """How GPU pods rank the nodes that fit."""
    default_capacity_type: CapacityChoice | Literal[""] = DEFAULT_CAPACITY_TYPE_SETTING.default
    """The capacity-type choice of a pod of the custom scheduler without the annotation ("" for
    none)."""
    job_zone: JobZoneArgs = field(default_factory=JobZoneArgs)
    vendor_memory_labels: tuple[str, ...] = VENDOR_MEMORY_LABELS_SETTING.default
    """The per-GPU MiB labels read, in order, on a node without ours."""
    instance_type_gpu_memory_mib: Mapping[str, int] = field(default_factory=snapshot_gpu_memory_table)
    """Instance type -> MiB per GPU, for a node with none of the labels: EC2's GPU data."""

    def __post_init__(self) -> None:
        memory = PolicySettings(
            vendor_memory_labels=self.vendor_memory_labels,
            instance_type_gpu_memory_mib=self.instance_type_gpu_memory_mib,
        )
        object.__setattr__(self, "instance_type_gpu_memory_mib", memory.instance_type_gpu_memory_mib)
        for setting in (
            SCORING_STRATEGY_SETTING,
            DEFAULT_CAPACITY_TYPE_SETTING,
            VENDOR_MEMORY_LABELS_SETTING,
        ):
            object.__setattr__(self, setting.field, _check(setting, self.value(setting), "policy"))

    def value(self, setting: StackSetting[Any]) -> Any:
        """The chosen value of a schema setting of the policy (the job-zone ones in ``job_zone``)."""
        holder = self.job_zone if setting.field in _JOB_ZONE_FIELDS else self
        return getattr(holder, setting.field)

    def _chosen(self) -> list[tuple[StackSetting[Any], Any]]:
        """The policy settings the schema renders and their values, those left unset left out."""
        chosen = [
            (setting, self.value(setting)) for setting in STACK_SETTINGS if setting.field in _POLICY_FIELDS
        ]
        return [(setting, value) for setting, value in chosen if value != UNSET]

    def plugin_config(self) -> list[dict[str, Any]]:
        """Plugin mode's ``pluginConfig``: each setting as the plugin args the schema names, and where
        GPUScheduler and JobZone read a node's memory (the instance-type table); a plugin given no
        arg (CapacityType without a default choice) gets no entry."""
        args: dict[str, dict[str, Any]] = {}
        for setting, value in self._chosen():
            for arg in setting.plugin_args:
                args.setdefault(arg.plugin, {})[arg.arg] = arg.rendered(value)
        for plugin in (GPU_SCHEDULER_PLUGIN, JOB_ZONE_PLUGIN):
            args.setdefault(plugin, {})["instanceTypeGPUMemoryMiB"] = dict(self.instance_type_gpu_memory_mib)
        order = [arg.plugin for setting in STACK_SETTINGS for arg in setting.plugin_args]
        return [{"name": name, "args": args[name]} for name in sorted(args, key=order.index)]

    def _flags(self, role: FlagRole) -> list[str]:
        """The flags of the extender program's ``role`` for these choices, and the instance-type table."""
        flags = [
            flag(setting.field, setting.text(value))
            for setting, value in self._chosen()
            if role in setting.flag_roles
        ]
        return [*flags, flag("instance_type_gpu_memory_mib", table_text(self.instance_type_gpu_memory_mib))]

    def extender_flags(self) -> list[str]:
        """The extender's flags for these choices (both extender modes)."""
        return self._flags("extender")

    def webhook_flags(self) -> list[str]:
        """The webhook's flags for these choices (every mode)."""
        return self._flags("webhook")


_JOB_ZONE_FIELDS = frozenset(item.name for item in fields(JobZoneArgs))
_POLICY_FIELDS = frozenset(item.name for item in fields(PolicyChoices)) | _JOB_ZONE_FIELDS
"""The schema settings a ``PolicyChoices`` holds (the scheduler's own, such as its client rate, are
rendered by the scheduler's configuration)."""


def _check(setting: StackSetting[Any], value: object, what: str) -> Any:
    """``value`` as the schema checks it (the default, unset included, as it is); a ValueError
    naming the field."""
    if value == setting.default:
        return setting.default
    try:
        return setting.check(value)
    except SettingError as error:
        raise ValueError(f"{what} {setting.field} {error}") from None


DEFAULT_POLICY_CHOICES = PolicyChoices()
"""The policy's defaults: prefer-larger, the vendor labels and EC2's instance-type table, no default
capacity-type choice, JobZone's defaults."""
