"""The node cache of ``--node-cache watch``: what it keeps of each Node, the list/watch loop that
keeps it, the lookups of nodes it does not know yet, and the API client both use.

``metadata``: a Node's metadata decoded (no I/O); ``cache``: name -> label value (no I/O);
``sync``: list, watch, resume, relist, back-off; ``lookup``: bounded GETs of unknown candidates;
``kube_api``: the ``NodeApi`` over kubernetes_asyncio (imported only in watch mode).
"""
