"""The GPU-memory scheduler extender: kube-scheduler's HTTP extender protocol over mutual TLS.

Layers, each in its own module: ``cli`` (flags) -> ``service`` (listeners, TLS reloads,
shutdown) -> ``http_server`` (sockets, TLS, h11, limits) -> ``handlers`` (the verbs) ->
``wire`` (the extender JSON) -> ``policy`` (the rule, a separate package).
"""
