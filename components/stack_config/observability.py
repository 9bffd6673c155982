"""``observability``: CloudWatch monitoring (the add-on, the dashboard, the alarms), off by default."""

import dataclasses
import re
from dataclasses import dataclass, field

from components.stack_config.validation import Value
from render.metric_specs import METRIC_SPECS, Alarm, alarm_keys

OBSERVABILITY_ADDON = "amazon-cloudwatch-observability"
DEFAULT_ADDON_VERSION = "v6.4.0-eksbuild.1"
"""The add-on version the stack pins; its chart's DCGM allow-list is render/dcgm_affinity.json."""
POD_IDENTITY_ADDON_VERSION = (3, 1, 0)
"""The first add-on version whose ``cloudwatch-agent`` ServiceAccount can use EKS Pod Identity."""
ADDON_VERSION = re.compile(r"v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)-eksbuild\.[1-9][0-9]*")
MAX_ALARM_MINUTES = 1440
"""CloudWatch evaluates at most a day of one-minute periods."""


@dataclass(frozen=True)
class ObservabilitySettings:
    """The ``amazon-cloudwatch-observability`` add-on, the dashboard and the alarms."""

    enabled: bool = False
    addon_version: str = DEFAULT_ADDON_VERSION
    alarm_topic: bool = False
    """Create an SNS topic and send every alarm (and its recovery) to it."""
    alarms: dict[str, Alarm | None] = field(default_factory=dict)
    """Per metric spec key: its alarm as configured (None: switched off); absent: the spec's own."""


def addon_version_tuple(version: str) -> tuple[int, int, int]:
    """``v6.4.0-eksbuild.1`` -> (6, 4, 0)."""
    match = ADDON_VERSION.fullmatch(version)
    assert match is not None, version
    return int(match[1]), int(match[2]), int(match[3])


def parse_observability(value: Value) -> ObservabilitySettings:
    fields = value.fields({"enabled", "addonVersion", "alarmTopic", "alarms"})
    default = ObservabilitySettings()
    version = fields.read("addonVersion", default.addon_version, _addon_version)
    return ObservabilitySettings(
        enabled=fields.read("enabled", default.enabled, Value.boolean),
        addon_version=version,
        alarm_topic=fields.read("alarmTopic", default.alarm_topic, Value.boolean),
        alarms=fields.read("alarms", default.alarms, _alarms),
    )


def _addon_version(value: Value) -> str:
    version = value.string(ADDON_VERSION, f"an EKS add-on version such as {DEFAULT_ADDON_VERSION}")
    if addon_version_tuple(version) < POD_IDENTITY_ADDON_VERSION:
        first = ".".join(map(str, POD_IDENTITY_ADDON_VERSION))
        value.fail(
            f"{version} does not offer EKS Pod Identity for its cloudwatch-agent ServiceAccount "
            f"(from v{first}); use {DEFAULT_ADDON_VERSION} or newer"
        )
    return version


def _alarms(value: Value) -> dict[str, Alarm | None]:
    known = alarm_keys()
    fields = value.fields(set(known))
    specs = {spec.key: spec for spec in METRIC_SPECS}
    alarms: dict[str, Alarm | None] = {}
    for key, item in fields.items():
        own = specs[key].alarm
        assert own is not None
        settings = item.fields({"enabled", "threshold", "minutes"})
        if not settings.read("enabled", True, Value.boolean):
            alarms[key] = None
            continue
        alarms[key] = dataclasses.replace(
            own,
            threshold=settings.read("threshold", own.threshold, _number),
            minutes=settings.read("minutes", own.minutes, lambda v: v.integer(1, MAX_ALARM_MINUTES)),
        )
    return alarms


def _number(value: Value) -> float:
    if isinstance(value.raw, bool) or not isinstance(value.raw, int | float):
        value.fail(f"must be a number, not {value.raw!r}")
    return float(value.raw)
