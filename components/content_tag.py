"""Image tags that change exactly when an image's sources change.

The ECR repositories have immutable tags, so a tag can never be pushed twice with other
content: the tag is a hash of the files the image is built from (paths and bytes). Same
sources, same tag, no rebuild or rollout; one changed byte, a new tag and a rolling update.
A pure module (no Pulumi import).
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


def content_tag(root: Path, sources: Iterable[str], prefix: str = "src") -> str:
    """``<prefix>-<hash>``: a SHA-256 over the relative paths and bytes of the source files."""
    digest = hashlib.sha256()
    for path in source_files(root, sources):
        relative = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        for part in (relative, data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return f"{prefix}-{digest.hexdigest()[:TAG_HASH_CHARS]}"


def _ignored(relative: Path) -> bool:
    return any(part in IGNORED_NAMES for part in relative.parts) or relative.suffix in IGNORED_SUFFIXES
