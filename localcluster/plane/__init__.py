"""The control plane and what lives in it: etcd and kube-apiserver, the simulated fleet's
nodes, namespaces and pods, and where each pod went. May import ``localcluster.host``."""
