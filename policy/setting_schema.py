"""One schema for the settings a stack chooses of the policy and of the scheduler that runs it.

Each setting is declared once, here: its stack key, the extender's or webhook's flag that carries
it, the plugin args it is rendered into, its type, default, bounds and help. The stack parser, the
extender's and explain's flags, the plugin args the stack renders and the settings table of
docs/configuration.md are made from this table, and every value is checked by its entry, in one
place: ``check`` for a value as the stack holds it, ``parse_text`` for a flag's text.

A pure module: no I/O, no import outside ``policy``.
"""

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from policy.capacity_type import CAPACITY_CHOICES, CapacityChoice
from policy.job_zone import JOB_SIZE_ANNOTATION, JOB_SIZE_LIMIT, MAX_JOB_SIZE
from policy.setting_text import label_list_text, parse_label_list
from policy.settings import (
    GFD_GPU_MEMORY_LABEL,
    INSTANCE_TYPE_LABEL,
    NODE_MEMORY_LABEL,
    SCORING_STRATEGIES,
    SCORING_STRATEGY,
    VENDOR_MEMORY_LABELS,
    ScoringStrategy,
)

ValueT = TypeVar("ValueT")
ChoiceT = TypeVar("ChoiceT", bound=str)
FlagRole = Literal["extender", "webhook"]
"""Which role of the extender program takes a setting's flag."""

GPU_SCHEDULER_PLUGIN = "GPUScheduler"
"""Plugin mode: the GPU-memory rule's plugin."""
CAPACITY_TYPE_PLUGIN = "CapacityType"
"""Plugin mode: the capacity-type rule's plugin (on-demand or spot as the pod's choice)."""
JOB_ZONE_PLUGIN = "JobZone"
"""Plugin mode: keeps each same-zone job in one zone chosen for the whole job (plugin/jobzone)."""

UNSET: Literal[""] = ""
"""A choice setting's value when the stack leaves it unset: no flag and no plugin arg is rendered."""

LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
"""A Kubernetes label key: an optional DNS-subdomain prefix and ``/``, then a name of at most 63
letters, digits, ``-``, ``_`` and ``.``, beginning and ending with a letter or digit."""

_INTEGER_TEXT = re.compile(r"-?[0-9]{1,12}")
"""An integer as Pulumi's string config and a flag carry it."""

PERMIT_TIMEOUT_SECONDS = 15 * 60
"""JobZone's ``permitTimeout``: longer than a GPU node launch; kube-scheduler caps any Permit wait
at 15 minutes."""
MAX_PERMIT_TIMEOUT_SECONDS = 15 * 60
"""kube-scheduler's own cap on a Permit wait."""
FAILED_ZONE_SECONDS = 10 * 60
"""JobZone's ``failedZoneDuration``: how long a zone where a job timed out is skipped for that job,
and the longest a zone given up at PostFilter is (that skip ends when room frees in the zone)."""
MAX_FAILED_ZONE_SECONDS = 24 * 3600
"""A day: a zone skipped longer than that is better taken out of the node groups."""

CLIENT_QPS = 1000
"""The custom scheduler's ``clientConnection.qps`` and ``burst``. kube-scheduler's own 50/100 paces
a burst of same-zone jobs by its client: 20 jobs of 8 created at once bound in 2.11-2.18x the time
of the same pods in no job at 50/100, and in 1.16-1.34x at 1000/1000 (bench/RESULTS.md, medians of
five rounds at 30 and 501 nodes); plain pods bind at the rate of their creation either way."""
MAX_CLIENT_QPS = 5000
"""Five times the rate measured: above it a value is more likely a typo than a need, and the API
server's priority and fairness limits one client's share anyway."""


class SettingError(ValueError):
    """A value a setting refuses; the message says what is wrong, and the caller names where
    (a stack key, a flag)."""


@dataclass(frozen=True)
class PluginArg:
    """One plugin arg a setting is rendered into (plugin mode's ``pluginConfig``)."""

    plugin: str
    arg: str
    unit: str = ""
    """Appended to the value: ``s`` renders seconds as a duration (``900s``)."""

    def rendered(self, value: object) -> object:
        """The value as the plugin's args hold it."""
        if isinstance(value, tuple):
            return list(value)
        return f"{value}{self.unit}" if self.unit else value


@dataclass(frozen=True)
class StackSetting(ABC, Generic[ValueT]):
    """A setting: where it is read and written, its default and what it means."""

    stack_key: str
    """Its key in the stack configuration (a dotted path for a key inside an object)."""
    field: str
    """Its name in the program: the stack's and the renderers' field, the flag's settings field."""
    default: ValueT
    help: str
    """One sentence of what it does and why; the flag's help and the docs table's."""
    flag_roles: tuple[FlagRole, ...] = ()
    """The extender program's roles that take it as ``--<field>``; () for none."""
    plugin_args: tuple[PluginArg, ...] = ()
    """The plugin args it is rendered into in plugin mode."""
    rendered_as: str = ""
    """Where else it is rendered (a KubeSchedulerConfiguration field), for the docs."""
    example: ValueT | None = None
    """A valid value other than the default: the one the tests set to follow it to every consumer."""

    @property
    def section(self) -> str:
        """The stack object holding the key ("" for a top-level key)."""
        return self.stack_key.rpartition(".")[0]

    @property
    def key(self) -> str:
        """The key inside its section."""
        return self.stack_key.rpartition(".")[2]

    @property
    def structured(self) -> bool:
        """The stack holds it as JSON (a list), not as plain text."""
        return False

    @abstractmethod
    def check(self, raw: object) -> ValueT:
        """The value as the stack holds it (JSON, or Pulumi's text), checked; raises SettingError."""

    def parse_text(self, text: str) -> ValueT:
        """The value a flag's text gives, checked; raises SettingError."""
        return self.check(text)

    def text(self, value: ValueT) -> str:
        """The value as a flag carries it."""
        return str(value)

    @abstractmethod
    def bounds(self) -> str:
        """What the check allows, for the docs."""


@dataclass(frozen=True)
class IntegerSetting(StackSetting[int]):
    """A whole number in ``low..high``."""

    low: int = 1
    high: int = 1

    def check(self, raw: object) -> int:
        value = int(raw) if isinstance(raw, str) and _INTEGER_TEXT.fullmatch(raw) else raw
        if isinstance(value, bool) or not isinstance(value, int):
            raise SettingError(f"must be an integer, not {raw!r}")
        if not self.low <= value <= self.high:
            raise SettingError(f"must be {self.low}..{self.high}, not {value}")
        return value

    def bounds(self) -> str:
        return f"{self.low}..{self.high}"


@dataclass(frozen=True)
class ChoiceSetting(StackSetting[ChoiceT]):
    """One of ``choices``; a default of ``UNSET`` means none is chosen unless the stack sets one."""

    choices: tuple[ChoiceT, ...] = ()

    def check(self, raw: object) -> ChoiceT:
        for choice in self.choices:
            if raw == choice:
                return choice
        raise SettingError(f"must be one of {', '.join(self.choices)}, not {raw!r}")

    def parse_text(self, text: str) -> ChoiceT:
        """A flag may also give ``UNSET`` (empty) where the default is unset."""
        if text == UNSET and self.default == UNSET:
            return self.default
        return self.check(text)

    def bounds(self) -> str:
        return " or ".join(f"`{choice}`" for choice in self.choices)


@dataclass(frozen=True)
class LabelListSetting(StackSetting[tuple[str, ...]]):
    """A list of Kubernetes label keys, none repeated, none of them ``refused``."""

    refused: str = ""
    refused_because: str = ""

    @property
    def structured(self) -> bool:
        return True

    def check(self, raw: object) -> tuple[str, ...]:
        if not isinstance(raw, list | tuple):
            raise SettingError("must be a list")
        for item in raw:
            if not isinstance(item, str) or not item:
                raise SettingError("must be a non-empty string")
            if not LABEL_KEY.fullmatch(item):
                raise SettingError(
                    f"{item!r} is not valid: a Kubernetes label key such as {GFD_GPU_MEMORY_LABEL}"
                )
        if len(set(raw)) != len(raw):
            raise SettingError("must not repeat a value")
        if self.refused in raw:
            raise SettingError(f"must not list {self.refused}: {self.refused_because}")
        return tuple(raw)

    def parse_text(self, text: str) -> tuple[str, ...]:
        try:
            return self.check(parse_label_list(text))
        except SettingError:
            raise
        except ValueError as error:
            raise SettingError(str(error)) from None

    def text(self, value: tuple[str, ...]) -> str:
        return label_list_text(value)

    def bounds(self) -> str:
        return f"Kubernetes label keys, no repeats, not `{self.refused}`"


SCORING_STRATEGY_SETTING = ChoiceSetting[ScoringStrategy](
    example="best-fit",
    stack_key="scoringStrategy",
    field="scoring_strategy",
    default=SCORING_STRATEGY,
    choices=SCORING_STRATEGIES,
    help="how GPU pods rank the nodes that fit: larger GPUs first (prefer-larger) or the smallest"
    " sufficient GPU first (best-fit)",
    flag_roles=("extender",),
    plugin_args=(PluginArg(GPU_SCHEDULER_PLUGIN, "scoringStrategy"),),
)
DEFAULT_CAPACITY_TYPE_SETTING = ChoiceSetting[CapacityChoice | Literal[""]](
    example="prefer-spot",
    stack_key="defaultCapacityType",
    field="default_capacity_type",
    default=UNSET,
    choices=CAPACITY_CHOICES,
    help="the capacity-type choice of a pod of the custom scheduler without the capacity-type"
    " annotation (its own annotation wins); unset: such pods are not judged by the rule",
    flag_roles=("extender", "webhook"),
    plugin_args=(
        PluginArg(CAPACITY_TYPE_PLUGIN, "defaultChoice"),
        PluginArg(JOB_ZONE_PLUGIN, "defaultCapacityChoice"),
    ),
)
VENDOR_MEMORY_LABELS_SETTING = LabelListSetting(
    example=("example.com/vram-mib",),
    stack_key="vendorGpuMemoryLabels",
    field="vendor_memory_labels",
    default=VENDOR_MEMORY_LABELS,
    help=f"the other schemes' per-GPU MiB labels read, in this order, on a node without {NODE_MEMORY_LABEL}"
    " (empty: none of them)",
    refused=INSTANCE_TYPE_LABEL,
    refused_because="the instance type is always read last, through EC2's GPU data",
    flag_roles=("extender", "webhook"),
    plugin_args=(
        PluginArg(GPU_SCHEDULER_PLUGIN, "vendorMemoryLabels"),
        PluginArg(JOB_ZONE_PLUGIN, "vendorMemoryLabels"),
    ),
)
PERMIT_TIMEOUT_SETTING = IntegerSetting(
    example=60,
    stack_key="scheduler.jobPermitTimeoutSeconds",
    field="permit_timeout_seconds",
    default=PERMIT_TIMEOUT_SECONDS,
    low=1,
    high=MAX_PERMIT_TIMEOUT_SECONDS,
    help="seconds the JobZone plugin holds a same-zone job's placed members for the rest before giving"
    " the zone up; longer than a GPU node launch (kube-scheduler caps any Permit wait at 15 minutes)",
    plugin_args=(PluginArg(JOB_ZONE_PLUGIN, "permitTimeout", unit="s"),),
)
FAILED_ZONE_SETTING = IntegerSetting(
    example=120,
    stack_key="scheduler.failedZoneSeconds",
    field="failed_zone_seconds",
    default=FAILED_ZONE_SECONDS,
    low=1,
    high=MAX_FAILED_ZONE_SECONDS,
    help="seconds a zone where a job timed out is skipped when that job is planned again; a zone"
    " where no node passed the filters for a member is skipped until room frees there, at most this long",
    plugin_args=(PluginArg(JOB_ZONE_PLUGIN, "failedZoneDuration", unit="s"),),
)
MAX_JOB_SIZE_SETTING = IntegerSetting(
    example=64,
    stack_key="scheduler.maxJobSize",
    field="max_job_size",
    default=MAX_JOB_SIZE,
    low=1,
    high=JOB_SIZE_LIMIT,
    help=f"the largest {JOB_SIZE_ANNOTATION} a same-zone pod may declare: the JobZone plugin's and the"
    " webhook's bound, the same in every mode",
    flag_roles=("webhook",),
    plugin_args=(PluginArg(JOB_ZONE_PLUGIN, "maxJobSize"),),
)
CLIENT_QPS_SETTING = IntegerSetting(
    example=250,
    stack_key="scheduler.clientQps",
    field="client_qps",
    default=CLIENT_QPS,
    low=1,
    high=MAX_CLIENT_QPS,
    help="the rate (requests per second, and the burst) at which the custom scheduler's client writes"
    " Bindings and status updates, in every mode; above kube-scheduler's own 50/100 because a burst of"
    " same-zone jobs makes two writes per held member and at 50/100 bound in about 2.1x the time of"
    " the same pods in no job, at 1000 in 1.16-1.34x (bench/RESULTS.md)",
    rendered_as="`clientConnection.qps` and `burst`",
)

STACK_SETTINGS: tuple[StackSetting[Any], ...] = (
    SCORING_STRATEGY_SETTING,
    DEFAULT_CAPACITY_TYPE_SETTING,
    VENDOR_MEMORY_LABELS_SETTING,
    PERMIT_TIMEOUT_SETTING,
    FAILED_ZONE_SETTING,
    MAX_JOB_SIZE_SETTING,
    CLIENT_QPS_SETTING,
)
"""Every setting of the schema, in the order the docs list them."""


def section_settings(section: str) -> tuple[StackSetting[Any], ...]:
    """The settings whose keys are in the stack object ``section`` ("" for the top level)."""
    return tuple(setting for setting in STACK_SETTINGS if setting.section == section)


def flag_setting(field: str) -> StackSetting[Any] | None:
    """The setting a flag of the extender program (or explain) carries, by its settings field."""
    return next(
        (setting for setting in STACK_SETTINGS if setting.flag_roles and setting.field == field), None
    )
