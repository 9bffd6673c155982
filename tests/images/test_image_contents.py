"""What each image holds: the extender's /app is exactly the packages it copies (the image's
sources, as the content tag hashes them) and the installed requirements; the gpu-scheduler image
is its binary on the static base, nothing else. A file the build context should have kept out
(tests/, .venv, .cache, a build tree) fails here."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.host.images import LocalImages, podman
from render.content_tag import source_files
from render.image_sources import EXTENDER_IMAGE

REPO_ROOT = Path(__file__).resolve().parents[2]
NEVER_IN_AN_IMAGE = {
    "tests",
    ".venv",
    ".cache",
    ".git",
    ".pytest_cache",
    ".mypy_cache",
    "bench",
    "localcluster",
}
"""Directory names of this repository that no image needs."""
STATIC_BASE_FILES = {"etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt"}


@pytest.fixture
def mounted(images: LocalImages) -> Iterator[dict[str, Path]]:
    """Each image's root file system, mounted read-only on the host for the test."""
    roots = {
        image: Path(podman("image", "mount", image).strip())
        for image in (images.extender, images.gpu_scheduler)
    }
    try:
        yield roots
    finally:
        for image in roots:
            podman("image", "unmount", image)


def files_under(root: Path) -> set[str]:
    return {
        path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file() or path.is_symlink()
    }


def test_extender_app_holds_exactly_its_sources_and_requirements(
    images: LocalImages, mounted: dict[str, Path]
) -> None:
    app = mounted[images.extender] / "app"
    assert {path.name for path in app.iterdir()} == {*EXTENDER_IMAGE.sources, "site-packages"}
    in_image = {f for f in files_under(app) if not f.startswith("site-packages/") and "__pycache__" not in f}
    sources = {
        path.relative_to(REPO_ROOT).as_posix() for path in source_files(REPO_ROOT, EXTENDER_IMAGE.sources)
    }
    assert in_image == sources
    assert not [
        f
        for f in files_under(mounted[images.extender])
        if NEVER_IN_AN_IMAGE & set(f.split("/")[:-1]) and not f.startswith("app/site-packages/")
    ]


def test_gpu_scheduler_image_is_the_binary_on_the_static_base(
    images: LocalImages, mounted: dict[str, Path]
) -> None:
    assert files_under(mounted[images.gpu_scheduler]) == STATIC_BASE_FILES | {"usr/local/bin/gpu-scheduler"}
