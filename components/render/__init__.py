"""Pure modules (no ``pulumi`` import) that the Pulumi components and the local run share.

What the program deploys and what ``localcluster``, ``explain`` and ``bench`` compute without
Pulumi come from the same code: the KubeSchedulerConfiguration of each mode
(``scheduler_config``), the extender's node-reader RBAC rules (``node_reader``) and the GPU-memory
label derived from EC2's instance-type data (``gpu_memory``). A test keeps ``pulumi`` out of them.
"""
