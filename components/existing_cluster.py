"""A Kubernetes cluster made elsewhere: the stack reaches it through a kubeconfig, nothing more.

No AWS resource and no AWS lookup: the Kubernetes provider gets the configured kubeconfig
(a Pulumi secret, so the state holds it encrypted) and, if set, the context to use.
"""

import pulumi
import pulumi_kubernetes as k8s

from components.stack_config import ExistingClusterSettings


class ExistingCluster(pulumi.ComponentResource):
    """The Kubernetes provider for a cluster this stack does not create."""

    provider: k8s.Provider

    def __init__(
        self, name: str, settings: ExistingClusterSettings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-scheduler-eks:index:ExistingCluster", name, None, opts)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=pulumi.Output.secret(settings.kubeconfig),
            context=settings.context,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"context": settings.context})
