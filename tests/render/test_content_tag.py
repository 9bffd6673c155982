"""Image tags from source hashes: same sources, same tag; any change, a new tag."""

import re
from pathlib import Path

import pytest

from contracts.release import REPO_ROOT
from render.content_tag import content_tag, source_files
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE, ImageSource


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hello')\n")
    (tmp_path / "app" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "rule.py").write_text("RULE = 1\n")
    return tmp_path


def test_same_sources_same_tag(tree: Path) -> None:
    first = content_tag(tree, ["app", "lib"])
    assert first == content_tag(tree, ["lib", "app"])
    assert re.fullmatch(r"src-[0-9a-f]{20}", first)


def test_one_changed_byte_changes_the_tag(tree: Path) -> None:
    before = content_tag(tree, ["app", "lib"])
    (tree / "lib" / "rule.py").write_text("RULE = 2\n")
    assert content_tag(tree, ["app", "lib"]) != before


def test_a_renamed_or_added_file_changes_the_tag(tree: Path) -> None:
    before = content_tag(tree, ["app"])
    (tree / "app" / "main.py").rename(tree / "app" / "entry.py")
    renamed = content_tag(tree, ["app"])
    assert renamed != before
    (tree / "app" / "extra.py").write_text("")
    assert content_tag(tree, ["app"]) != renamed


def test_a_changed_file_mode_changes_the_tag(tree: Path) -> None:
    """The builder's context hash sees a chmod and COPY keeps the mode: another image, another tag."""
    before = content_tag(tree, ["app"])
    (tree / "app" / "main.py").chmod(0o755)
    assert content_tag(tree, ["app"]) != before


def test_build_inputs_change_the_tag(tree: Path) -> None:
    plain = content_tag(tree, ["app"])
    amd64 = content_tag(tree, ["app"], build_inputs=("app/Dockerfile", "linux/amd64"))
    assert amd64 != plain
    assert amd64 != content_tag(tree, ["app"], build_inputs=("app/Dockerfile", "linux/arm64"))
    assert amd64 == content_tag(tree, ["app"], build_inputs=("app/Dockerfile", "linux/amd64"))


def test_caches_do_not_change_the_tag(tree: Path) -> None:
    before = content_tag(tree, ["app"])
    (tree / "app" / "__pycache__").mkdir()
    (tree / "app" / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\x00")
    (tree / "app" / "stale.pyc").write_bytes(b"\x00")
    assert content_tag(tree, ["app"]) == before


def test_a_missing_source_is_an_error(tree: Path) -> None:
    with pytest.raises(FileNotFoundError, match="'gone'"):
        content_tag(tree, ["app", "gone"])


def _copy_sources(dockerfile: Path) -> list[str]:
    """Sources of the Dockerfile's COPY/ADD lines that read the build context (not --from stages)."""
    sources = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if not words or words[0].upper() not in ("COPY", "ADD"):
            continue
        arguments = [word for word in words[1:] if not word.startswith("--")]
        if any(word.startswith("--from") for word in words[1:]):
            continue
        sources.extend(arguments[:-1])
    return sources


@pytest.mark.parametrize("image", [EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE], ids=lambda image: image.repository)
def test_the_tag_covers_everything_the_dockerfile_copies(image: ImageSource) -> None:
    dockerfile = REPO_ROOT / image.dockerfile
    assert dockerfile.is_file(), f"{image.dockerfile} is what the Pulumi program builds"
    context = REPO_ROOT / image.context
    hashed = {path.resolve() for path in source_files(REPO_ROOT, image.sources)}
    copied = _copy_sources(dockerfile)
    assert copied, f"{image.dockerfile} copies nothing from its context"
    for source in copied:
        pattern = source.lstrip("/")
        matched = list(context.glob(pattern)) if set(pattern) & set("*?[") else [context / pattern]
        for path in matched:
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            missing = [f for f in files if f.resolve() not in hashed and "__pycache__" not in f.parts]
            assert not missing, f"{image.dockerfile} copies {source}, which the image tag does not hash"
