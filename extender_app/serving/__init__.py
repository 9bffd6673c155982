"""The HTTP/TLS serving core: asyncio sockets, per-connection TLS, h11, deadlines and limits.

Knows nothing of the extender's verbs or the webhook: ``HttpServer`` asks a router for each
request's ``Route`` and records every answer.
"""
