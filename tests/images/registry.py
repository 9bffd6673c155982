"""A local registry (distribution's ``docker-registry``, from Debian) on loopback, for the push
path: no authentication, storage in the test's directory, a port from ``localcluster.host.ports``."""

import http.client
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from localcluster.host.probes import LOOPBACK, http_status
from localcluster.host.processes import ManagedProcess, ProcessGroup, raise_if_exited
from localcluster.host.waiting import wait_for

READY_SECONDS = 30.0
"""How long the registry may take to answer ``GET /v2/``."""
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
)
INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json"
)


@dataclass(frozen=True)
class LocalRegistry:
    process: ManagedProcess
    port: int

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def manifest_digest(self, repository: str, reference: str) -> str:
        """The digest the registry serves for ``repository:reference`` (``Docker-Content-Digest``)."""
        conn = http.client.HTTPConnection(LOOPBACK, self.port, timeout=READY_SECONDS)
        try:
            conn.request(
                "HEAD", f"/v2/{repository}/manifests/{reference}", headers={"Accept": MANIFEST_TYPES}
            )
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise AssertionError(f"registry answered {response.status} for {repository}:{reference}")
            return response.getheader("Docker-Content-Digest", "")
        finally:
            conn.close()

    def get_json(self, path: str, accept: str = MANIFEST_TYPES) -> tuple[dict[str, Any], str]:
        """``GET /v2/<path>``: the JSON document and its ``Docker-Content-Digest``."""
        conn = http.client.HTTPConnection(LOOPBACK, self.port, timeout=READY_SECONDS)
        try:
            conn.request("GET", f"/v2/{path}", headers={"Accept": accept})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                raise AssertionError(f"registry answered {response.status} for /v2/{path}")
            document: dict[str, Any] = json.loads(body)
            return document, response.getheader("Docker-Content-Digest", "")
        finally:
            conn.close()


def start_registry(processes: ProcessGroup, work_dir: Path) -> LocalRegistry:
    """Write the registry's configuration under ``work_dir``, start it, wait until ``/v2/`` answers;
    started again on a fresh port if another program took the chosen one."""
    binary = shutil.which("docker-registry")
    if binary is None:
        raise FileNotFoundError("docker-registry is not installed: run `make images`")

    def start() -> LocalRegistry:
        (port,) = processes.reserve_ports(1)
        config = work_dir / f"registry-{port}.yml"
        document = {
            "version": 0.1,
            "log": {"level": "info"},
            "storage": {"filesystem": {"rootdirectory": str(work_dir / "registry-storage")}},
            "http": {"addr": f"{LOOPBACK}:{port}"},
        }
        config.write_text(yaml.safe_dump(document))
        process = processes.start("docker-registry", [binary, "serve", str(config)])
        wait_for(
            lambda: http_status(port, "/v2/") == 200,
            READY_SECONDS,
            "the registry's /v2/",
            also_check=raise_if_exited(process),
        )
        return LocalRegistry(process, port)

    return processes.retry_on_address_in_use(start, "the registry")
