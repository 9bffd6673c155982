"""The GPU-memory scheduler extender: kube-scheduler's HTTP extender protocol over mutual TLS.

Layers: ``cli`` (flags, described once in ``settings``) -> ``service`` (listeners, one route
table per role, TLS reloads, shutdown) -> ``serving`` (sockets, TLS, h11, limits) -> ``verbs``
(filter, prioritize and their JSON), ``node_cache`` (``--node-cache watch``) or ``webhook``
(``--role webhook``) -> ``policy`` (the rule, a separate package). What deployments must agree
on with the program (paths, ports, TLS files, flag values) is in ``contracts``.
"""
