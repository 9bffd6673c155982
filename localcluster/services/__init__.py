"""The project's parts on the control plane: the custom scheduler in each mode, the admission
webhook, Karpenter and kwok, and the Pulumi stack deployed onto it. May import
``localcluster.plane`` and ``localcluster.host``."""
