"""The renderers: what the stack declares, drawn as plain data, without Pulumi.

The KubeSchedulerConfiguration of each mode (``scheduler_config``), the RBAC rules
(``scheduler_rbac``, ``node_reader``), the webhook's configuration and command line
(``webhook_config``), Karpenter's NodePools and IAM documents, the GPU-memory label from EC2's
instance-type data (``gpu_memory``), the CloudWatch scrape rules, dashboard and alarms. The Pulumi
components declare them; ``localcluster``, ``explain``, ``bench`` and ``testbed`` draw the same
ones. This package imports only ``policy`` and ``contracts``, never ``pulumi``
(``tests/layout/test_packages.py``).
"""
