"""Image tags that change exactly when what the image builder compares changes.

The tag is a hash of the files the image is built from (paths, bytes and permission bits: the
builder's context hash sees a ``chmod`` and so does ``COPY``) and of the build's own inputs
(Dockerfile path, platform). Same inputs, same tag, no rebuild or rollout; one changed byte or
mode, a new tag and a rolling update. The tag names a build; what runs is pinned by digest
(components/container_image.py says why the repositories' tags are mutable). A pure module
(no Pulumi import).
"""

import hashlib
from collections.abc import Iterable
from pathlib import Path

IGNORED_NAMES = frozenset(
    {".git", ".venv", ".cache", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)
"""Directory names never part of an image's sources (caches, VCS data, virtualenvs)."""

IGNORED_SUFFIXES = (".pyc", ".pyo")
TAG_HASH_CHARS = 20
"""Hex digits of SHA-256 kept in the tag (80 bits: collisions are not a practical concern)."""


def source_files(root: Path, sources: Iterable[str]) -> list[Path]:
    """Every file under ``root/<source>`` for each source (a file or directory), sorted.

    Raises FileNotFoundError for a source that does not exist, so a renamed directory
    cannot silently drop out of the hash.
    """
    files: set[Path] = set()
    for source in sources:
        path = root / source
        if path.is_file():
            files.add(path)
        elif path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file() and not _ignored(p.relative_to(root)))
        else:
            raise FileNotFoundError(f"image source {source!r} does not exist under {root}")
    return sorted(files)


MODE_BITS = 0o7777
"""Permission bits (with setuid, setgid, sticky) of a file, as ``COPY`` keeps them."""


def content_tag(
    root: Path, sources: Iterable[str], build_inputs: Iterable[str] = (), prefix: str = "src"
) -> str:
    """``<prefix>-<hash>``: a SHA-256 over the relative paths, permission bits and bytes of the
    source files, then ``build_inputs`` (what else the builder compares: Dockerfile, platform)."""
    digest = hashlib.sha256()
    for path in source_files(root, sources):
        relative = path.relative_to(root).as_posix().encode()
        mode = f"{path.stat().st_mode & MODE_BITS:o}".encode()
        data = path.read_bytes()
        for part in (relative, mode, data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    for build_input in build_inputs:
        part = build_input.encode()
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return f"{prefix}-{digest.hexdigest()[:TAG_HASH_CHARS]}"


def _ignored(relative: Path) -> bool:
    return any(part in IGNORED_NAMES for part in relative.parts) or relative.suffix in IGNORED_SUFFIXES
