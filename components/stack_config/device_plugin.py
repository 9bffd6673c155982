"""``devicePlugin``: the NVIDIA device plugin Helm release."""

from dataclasses import dataclass

from components.stack_config.charts import NVIDIA_DEVICE_PLUGIN
from components.stack_config.validation import CHART_VERSION_PATTERN, Value

DEFAULT_DEVICE_PLUGIN_CHART_VERSION = NVIDIA_DEVICE_PLUGIN.version
"""nvidia-device-plugin chart: the newest 0.17.x release (NVIDIA/gpu-operator#1671 moved to it)."""


@dataclass(frozen=True)
class DevicePluginSettings:
    """The NVIDIA device plugin Helm release."""

    enabled: bool = True
    chart_version: str = DEFAULT_DEVICE_PLUGIN_CHART_VERSION


def parse_device_plugin(value: Value) -> DevicePluginSettings:
    fields = value.fields({"enabled", "chartVersion"})
    default = DevicePluginSettings()
    return DevicePluginSettings(
        enabled=fields.read("enabled", default.enabled, Value.boolean),
        chart_version=fields.read(
            "chartVersion",
            default.chart_version,
            lambda v: v.string(
                CHART_VERSION_PATTERN, f"a chart version such as {DEFAULT_DEVICE_PLUGIN_CHART_VERSION}"
            ),
        ),
    )
