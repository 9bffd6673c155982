"""Plain-HTTP probes of the health endpoints of processes on loopback."""

import http.client

LOOPBACK = "127.0.0.1"
PROBE_TIMEOUT_SECONDS = 2.0


def http_status(port: int, path: str, host: str = LOOPBACK) -> int | None:
    """The status of ``GET path``, or None when nothing answers."""
    connection = http.client.HTTPConnection(host, port, timeout=PROBE_TIMEOUT_SECONDS)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()
