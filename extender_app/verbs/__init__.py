"""The extender verbs (``/filter``, ``/prioritize``) and their wire format.

``handlers``: the verbs on full Nodes (``--node-cache off``); ``cached_handlers``: the same on
node names, reading the node cache (``--node-cache watch``); ``wire`` and ``wire_names``: the
``k8s.io/kube-scheduler/extender/v1`` JSON in and out.
"""
