"""Value types more than one section shares: a container's ``Resources`` and their parser."""

from dataclasses import dataclass

from components.stack_config.validation import Fields, Value
from policy import parse_quantity


@dataclass(frozen=True)
class Resources:
    """A container's requests and memory limit (no CPU limit: it only throttles)."""

    cpu_request: str
    memory_request: str
    memory_limit: str

    @property
    def requests(self) -> dict[str, str]:
        """The container's ``resources.requests``."""
        return {"cpu": self.cpu_request, "memory": self.memory_request}

    @property
    def limits(self) -> dict[str, str]:
        """The container's ``resources.limits``."""
        return {"memory": self.memory_limit}


def parse_resources(value: Value, default: Resources) -> Resources:
    fields = value.fields({"requests", "limits"})
    requests = fields.read("requests", Fields(), lambda v: v.fields({"cpu", "memory"}))
    limits = fields.read("limits", Fields(), lambda v: v.fields({"memory"}))
    resources = Resources(
        cpu_request=requests.read("cpu", default.cpu_request, Value.quantity),
        memory_request=requests.read("memory", default.memory_request, Value.quantity),
        memory_limit=limits.read("memory", default.memory_limit, Value.quantity),
    )
    if parse_quantity(resources.memory_limit) < parse_quantity(resources.memory_request):
        value.fail(
            f"limits.memory ({resources.memory_limit}) must be at least "
            f"requests.memory ({resources.memory_request})"
        )
    return resources
