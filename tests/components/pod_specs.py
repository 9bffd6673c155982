"""Reading the Deployments the program declared: their pod template, their containers, and the
restricted Pod Security profile every one of our pod specs must meet."""

from typing import Any

from tests.components.mocks import StackRun


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    """The containers of a Deployment's pod template."""
    result: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return result


def pod_template(run: StackRun, name: str) -> dict[str, Any]:
    """The pod template of the Deployment ``name``."""
    template: dict[str, Any] = run.kubernetes_object("Deployment", name)["spec"]["template"]
    return template


def assert_restricted(pod_spec: dict[str, Any]) -> None:
    """Non-root with our fixed ids, RuntimeDefault seccomp, no privilege escalation, a read-only
    root file system, every capability dropped, a memory limit and a CPU request per container."""
    security = pod_spec["securityContext"]
    assert security["runAsNonRoot"] is True
    assert (security["runAsUser"], security["runAsGroup"], security["fsGroup"]) == (65532, 65532, 65532)
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod_spec["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert "limits" in container["resources"]
        assert "memory" in container["resources"]["limits"]
        assert "cpu" in container["resources"]["requests"]
