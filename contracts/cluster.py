"""Names and labels the cluster's objects share: the deployment creates them, the rest find them."""

NAMESPACE = "scheduler-lab"
"""The namespace of the custom scheduler, the extender and the webhook."""
SCHEDULER_NAME = "custom-scheduler"
"""The scheduler's name: pods choose it with ``spec.schedulerName``; also its Lease, its
Deployment and its client certificate's common name."""
EXTENDER_SERVICE = "scheduler-extender"
"""The extender's Service (and Deployment, ServiceAccount) name in NAMESPACE."""
WEBHOOK_SERVICE = "gpu-memory-webhook"
"""The webhook's Service, Deployment, ServiceAccount and MutatingWebhookConfiguration name."""
SYSTEM_NAMESPACE = "kube-system"
"""Kubernetes' own namespace: the autoscalers, the device plugin and the API server's
authentication reader live there."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace; a namespaceSelector on it names namespaces."""
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
"""Node label of a GPU node (NVIDIA's GPU feature discovery sets it; our node groups and
Karpenter's pools set it at launch): the device plugin selects on it and ``explain`` reads it.
Not a policy key: the policy reads only the memory label."""
