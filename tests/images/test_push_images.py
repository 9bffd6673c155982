"""``make push-images`` (images/push.sh): both images pushed to a registry on loopback under the
release tag, each as an image index whose one linux/amd64 image is the one ``make images`` built
for the current sources and carries the release as its version label; the pinned reference the
script prints is the digest the registry serves for the tag."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from contracts.release import VERSION
from localcluster.host.images import LocalImages, podman
from localcluster.host.processes import ProcessGroup
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE
from tests.images.registry import INDEX_TYPES, start_registry

REPO = Path(__file__).resolve().parents[2]
PUSH_SCRIPT = REPO / "images" / "push.sh"
PUSH_SECONDS = 900.0
"""How long the script may take: it reruns ``make images`` (seconds when the images are built) and
pushes both images (under load, minutes)."""
NAMESPACE = "team"
"""A path under the registry, as an ECR repository named ``<namespace>/<image>`` has."""
VERSION_LABEL = "org.opencontainers.image.version"
PUSHED = re.compile(r"^\s+(\S+)\s+pushed (\S+):(\S+)@(sha256:[0-9a-f]{64})$", re.MULTILINE)
"""The script's line for each image: repository, target, tag and the pushed index's digest."""


def run_push(
    registry: str, *, platforms: str = "linux/amd64", bases: str = "local"
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLATFORMS": platforms, "BASES": bases, "TLS_VERIFY": "false"}
    return subprocess.run(
        [str(PUSH_SCRIPT), registry],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=PUSH_SECONDS,
        check=False,
    )


def test_both_images_are_pushed_with_the_release_tag_and_read_back(
    images: LocalImages, processes: ProcessGroup, tmp_path: Path
) -> None:
    registry = start_registry(processes, tmp_path)
    done = run_push(f"{registry.address}/{NAMESPACE}")
    assert done.returncode == 0, done.stdout + done.stderr

    printed = {match[0]: match[1:] for match in PUSHED.findall(done.stdout)}
    built = {EXTENDER_IMAGE.repository: images.extender, GPU_SCHEDULER_IMAGE.repository: images.gpu_scheduler}
    assert set(printed) == set(built)
    for repository, local in built.items():
        target, tag, index_digest = printed[repository]
        assert (target, tag) == (f"{registry.address}/{NAMESPACE}/{repository}", VERSION)
        name = f"{NAMESPACE}/{repository}"

        index, served = registry.get_json(f"{name}/manifests/{VERSION}", INDEX_TYPES)
        assert served == index_digest
        platforms = [entry["platform"] for entry in index["manifests"]]
        assert platforms == [{"architecture": "amd64", "os": "linux"}]

        manifest, _ = registry.get_json(f"{name}/manifests/{index['manifests'][0]['digest']}")
        config, _ = registry.get_json(f"{name}/blobs/{manifest['config']['digest']}", "*/*")
        assert config["architecture"] == "amd64"
        assert config["config"]["Labels"][VERSION_LABEL] == VERSION
        image_id = podman("image", "inspect", "--format", "{{.Id}}", local, store=images.store).strip()
        assert manifest["config"]["digest"] == f"sha256:{image_id}"


@pytest.mark.parametrize(
    ("registry", "platforms", "bases", "refusal"),
    [
        ("", "linux/amd64", "local", "name the registry"),
        ("127.0.0.1:1/team", "linux/arm64", "local", "build linux/arm64 with BASES=public"),
        ("127.0.0.1:1/team", "linux/s390x", "public", "PLATFORMS takes linux/amd64 and linux/arm64"),
        ("127.0.0.1:1/team", "linux/amd64", "nearby", "BASES is public or local"),
    ],
    ids=["no-registry", "arm64-on-local-bases", "unknown-platform", "unknown-bases"],
)
def test_what_cannot_be_built_is_refused_before_anything_is_built(
    registry: str, platforms: str, bases: str, refusal: str
) -> None:
    done = run_push(registry, platforms=platforms, bases=bases)
    assert done.returncode != 0
    assert refusal in done.stderr
    assert "Building the container images" not in done.stdout
