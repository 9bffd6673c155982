"""The push path as far as it goes here: both images pushed to a registry on loopback, the
digest the push reports is the one the registry serves for the tag, and the reference a
Deployment pins (``repository:tag@sha256:...``, the ``ref`` of the Pulumi image resource) pulls
into an empty store and runs from there."""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.host.images import LocalImages, podman
from localcluster.host.processes import ProcessGroup
from localcluster.host.waiting import wait_for
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE, ImageSource, image_tag
from tests.images.registry import start_registry

CLEANUP_SECONDS = 60.0
"""How long podman may take to remove the test's exited container."""
TRANSFER_SECONDS = 600.0
"""How long one push or pull may take (under load)."""
PROBES = {
    EXTENDER_IMAGE.repository: (("--help",), "usage: python -m extender_app"),
    GPU_SCHEDULER_IMAGE.repository: (("--version",), "Kubernetes v1.35."),
}
"""A command line each image answers without a cluster, and what its output starts with."""


@pytest.fixture
def empty_store(tmp_path: Path) -> Iterator[tuple[str, ...]]:
    """podman's global options for a store of its own, empty at first. Afterwards its run root is
    removed once no container is left (podman cleans up a ``--rm`` container, and releases its
    mounts there, after ``run`` has returned). The run root is short: podman refuses one longer
    than 50 characters."""
    with tempfile.TemporaryDirectory(prefix="gse-run-") as runroot:
        store = ("--root", str(tmp_path / "store"), "--runroot", runroot, "--storage-driver=overlay")
        yield store
        wait_for(
            lambda: not podman(*store, "ps", "--all", "--quiet").strip(), CLEANUP_SECONDS, "podman's cleanup"
        )


@pytest.mark.parametrize(
    "source", [EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE], ids=lambda source: source.repository
)
def test_push_then_pull_the_pinned_reference_into_an_empty_store_and_run_it(
    source: ImageSource,
    images: LocalImages,
    processes: ProcessGroup,
    tmp_path: Path,
    empty_store: tuple[str, ...],
) -> None:
    registry = start_registry(processes, tmp_path)
    local = images.extender if source is EXTENDER_IMAGE else images.gpu_scheduler
    tag = image_tag(source)
    target = f"{registry.address}/{source.repository}:{tag}"
    digest_file = tmp_path / "digest"
    podman(
        "push", "--tls-verify=false", f"--digestfile={digest_file}", local, target, timeout=TRANSFER_SECONDS
    )
    pushed = digest_file.read_text().strip()
    assert pushed.startswith("sha256:")
    assert registry.manifest_digest(source.repository, tag) == pushed

    pinned = f"{target}@{pushed}"
    podman(*empty_store, "pull", "--quiet", "--tls-verify=false", pinned, timeout=TRANSFER_SECONDS)
    assert podman(*empty_store, "image", "inspect", "--format", "{{.Digest}}", pinned).strip() == pushed
    args, expected = PROBES[source.repository]
    output = podman(*empty_store, "run", "--rm", "--read-only", "--network=host", pinned, *args)
    assert output.startswith(expected)
