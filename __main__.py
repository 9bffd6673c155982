"""The Pulumi program: read the stack configuration once, declare the stack, export its outputs.

``pulumi up`` per environment (``Pulumi.dev.yaml``, ``Pulumi.prod.yaml`` on EKS,
``Pulumi.local.yaml`` on an existing cluster, ...); see docs/configuration.md for
the keys and docs/deploy-eks.md for what gets created.
"""

import pulumi

from components.stack import build_stack
from components.stack_config.pulumi_config import load_stack_config

for name, value in build_stack(load_stack_config()).items():
    pulumi.export(name, value)
