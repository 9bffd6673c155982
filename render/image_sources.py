"""What each of our images is built from, and the tag that names a build of it.

The Pulumi program builds and pushes these images (``components/container_image.py``), and
``make images`` and the local run find the same builds by the same tag
(``localcluster/host/images.py``), so a tag names the same bytes wherever it is read.
"""

from dataclasses import dataclass

from contracts.release import REPO_ROOT
from render.content_tag import content_tag

IMAGE_PLATFORM = "linux/amd64"
"""The platform every image is built for: the node groups run x86_64 AMIs."""


@dataclass(frozen=True)
class ImageSource:
    """Where an image is built from; paths are relative to the project root."""

    repository: str
    context: str
    dockerfile: str
    sources: tuple[str, ...]
    """Everything the Dockerfile copies in; their bytes make the tag."""


EXTENDER_IMAGE = ImageSource(
    repository="scheduler-extender",
    context=".",
    dockerfile="extender_app/Dockerfile",
    sources=("extender_app", "contracts", "policy"),
)
GPU_SCHEDULER_IMAGE = ImageSource(
    repository="gpu-scheduler",
    context="plugin",
    dockerfile="plugin/Dockerfile",
    sources=("plugin",),
)


def image_tag(source: ImageSource) -> str:
    """The content tag of ``source``: its files, its Dockerfile and the platform built for."""
    return content_tag(REPO_ROOT, source.sources, build_inputs=(source.dockerfile, IMAGE_PLATFORM))
