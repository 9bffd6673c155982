"""Security contexts that satisfy Pod Security "restricted", shared by our Deployments and, as
plain values, by the charts that take them (Cluster Autoscaler's)."""

from typing import Any

import pulumi_kubernetes as k8s

NONROOT_UID = 65532
"""The distroless ``nonroot`` user and group; our images and kube-scheduler run as it."""
SECCOMP_PROFILE = "RuntimeDefault"


def pod_security_context() -> k8s.core.v1.PodSecurityContextArgs:
    """Non-root user and group, volume group ownership, the runtime's seccomp profile."""
    return k8s.core.v1.PodSecurityContextArgs(
        run_as_non_root=True,
        run_as_user=NONROOT_UID,
        run_as_group=NONROOT_UID,
        fs_group=NONROOT_UID,
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type=SECCOMP_PROFILE),
    )


def container_security_context() -> k8s.core.v1.SecurityContextArgs:
    """Read-only root filesystem, no privilege escalation, every capability dropped."""
    return k8s.core.v1.SecurityContextArgs(
        allow_privilege_escalation=False,
        read_only_root_filesystem=True,
        run_as_non_root=True,
        capabilities=k8s.core.v1.CapabilitiesArgs(drop=["ALL"]),
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type=SECCOMP_PROFILE),
    )


def pod_security_context_values() -> dict[str, Any]:
    """:func:`pod_security_context` with Kubernetes field names, for a chart's values."""
    return {
        "runAsNonRoot": True,
        "runAsUser": NONROOT_UID,
        "runAsGroup": NONROOT_UID,
        "fsGroup": NONROOT_UID,
        "seccompProfile": {"type": SECCOMP_PROFILE},
    }


def container_security_context_values() -> dict[str, Any]:
    """:func:`container_security_context` with Kubernetes field names, for a chart's values."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": SECCOMP_PROFILE},
    }
