"""The whole system on a local control plane: etcd, kube-apiserver, simulated GPU nodes,
the extender or the plugin scheduler, and the demo that drives them. Loopback only.

Four layers, each importing only the ones below it:
``demo`` -> ``services`` -> ``plane`` -> ``host``."""
