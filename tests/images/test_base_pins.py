"""Every base image of every Dockerfile is pinned by digest.

A tag can be pushed again with other content; a digest names one content, so a base changed
upstream cannot reach an image `pulumi up` builds without a change to this repository. Locally,
`images/build.sh` answers each reference, digest included, with a base made here
(docs/images.md); the pin is checked by the registry where the public base is pulled.
"""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PINNED = re.compile(r"^[\w./-]+(?::[\w.-]+)?@sha256:[0-9a-f]{64}$")
"""name[:tag]@sha256:<64 hex>."""


def dockerfiles() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*Dockerfile"], cwd=REPO, capture_output=True, text=True, check=True, timeout=30
    ).stdout.split()
    return [REPO / name for name in listed]


def bases(dockerfile: Path) -> list[str]:
    """The image each FROM names (a stage named earlier in the file is not an image)."""
    stages: set[str] = set()
    images = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if not words or words[0].upper() != "FROM":
            continue
        reference = next(word for word in words[1:] if not word.startswith("--"))
        if reference not in stages:
            images.append(reference)
        if len(words) >= 4 and words[-2].upper() == "AS":
            stages.add(words[-1])
    return images


def test_every_from_is_pinned_by_digest() -> None:
    found = {path.relative_to(REPO).as_posix(): bases(path) for path in dockerfiles()}
    assert set(found) == {"extender_app/Dockerfile", "plugin/Dockerfile"}
    unpinned = [
        f"{path}: FROM {image}"
        for path, images in found.items()
        for image in images
        if not PINNED.match(image)
    ]
    assert not unpinned, unpinned
