"""What two parts of the project must agree on, written once.

A leaf: pure constants and one small function, no imports of ours and no Pulumi, so the
extender program (``extender_app``), the Pulumi program (``components``), the local run
(``localcluster``), ``explain`` and ``bench`` all import it, the way kube-scheduler and every
extender import ``k8s.io/kube-scheduler/extender/v1``. ``server`` is the extender program's
interface as its deployments use it (roles, paths, ports, TLS files, flag values);
``cluster`` holds the names and labels the cluster's objects share; ``modes`` the scheduling
modes and autoscalers every part names.
"""
