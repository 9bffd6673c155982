"""The stack configuration: one typed, frozen, validated object read once per run.

One module per section (``network``, ``node_groups``, ``autoscaling``, ``scheduler``,
``extender``, ``webhook``, ``certificates``, ``images``, ``device_plugin``, ``access``,
``observability``), each
section's settings next to its parser; ``validation`` is the small library they share and
``stack`` joins them. The names the program and its tests use are re-exported here.

``parse_stack_config`` is pure: it takes the values Pulumi hands a program (strings, with
structured values as JSON text) and the keys Pulumi marks secret, and either returns a
``StackConfig`` or raises ``StackConfigError`` whose message starts with the full key, e.g.
``gpu-scheduler-eks:gpuNodeGroups[1].instanceTypes: ...``, so ``pulumi preview`` fails
before it declares anything. Unknown keys are errors too: a misspelt key would otherwise
be ignored and its default used silently. ``pulumi_config.load_stack_config`` reads Pulumi's
config; it is the package's one module that imports ``pulumi``, and is not re-exported here.

Two kinds of stack: on EKS (the default: the stack creates the VPC, cluster, node groups and
ECR repositories and builds the images) or on an existing cluster (``existingCluster``: a
kubeconfig, images given as references, nothing created in AWS). The keys that only make
sense on EKS are refused next to ``existingCluster``, and the other way round. On EKS,
``autoscaling`` chooses what adds GPU nodes (Cluster Autoscaler, Karpenter or nothing); each
autoscaler's own settings are refused unless it is the chosen one.
"""

from components.stack_config.access import ExistingClusterSettings
from components.stack_config.autoscaling import (
    DEFAULT_KARPENTER_CHART_VERSION,
    ClusterAutoscalerSettings,
    KarpenterSettings,
    check_zonal_pool_names,
)
from components.stack_config.certificates import CertificateSettings
from components.stack_config.extender import EXTENDER_RESOURCES, ExtenderDeploymentSettings
from components.stack_config.images import ImageSettings
from components.stack_config.network import ExistingNetwork, NewVpc
from components.stack_config.node_groups import (
    DEFAULT_GPU_NODE_GROUPS,
    GpuNodeGroupSettings,
    SystemNodeGroup,
    check_zonal_names,
)
from components.stack_config.observability import ObservabilitySettings
from components.stack_config.scheduler import MAX_EXTENDER_WEIGHT, SchedulerSettings
from components.stack_config.stack import (
    DEFAULT_KUBERNETES_VERSION,
    EKS_ONLY_KEYS,
    ClusterSettings,
    StackConfig,
    parse_stack_config,
)
from components.stack_config.validation import PROJECT, StackConfigError
from components.stack_config.values import Resources
from components.stack_config.webhook import WebhookSettings

__all__ = [
    "DEFAULT_GPU_NODE_GROUPS",
    "DEFAULT_KARPENTER_CHART_VERSION",
    "DEFAULT_KUBERNETES_VERSION",
    "EKS_ONLY_KEYS",
    "EXTENDER_RESOURCES",
    "MAX_EXTENDER_WEIGHT",
    "PROJECT",
    "CertificateSettings",
    "ClusterAutoscalerSettings",
    "ClusterSettings",
    "ExistingClusterSettings",
    "ExistingNetwork",
    "ExtenderDeploymentSettings",
    "GpuNodeGroupSettings",
    "ImageSettings",
    "KarpenterSettings",
    "NewVpc",
    "ObservabilitySettings",
    "Resources",
    "SchedulerSettings",
    "StackConfig",
    "StackConfigError",
    "SystemNodeGroup",
    "WebhookSettings",
    "check_zonal_names",
    "check_zonal_pool_names",
    "parse_stack_config",
]
