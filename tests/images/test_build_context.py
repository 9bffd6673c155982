"""The gpu-scheduler image's build context holds every package of ours that its command imports.

plugin/.dockerignore lists what the context keeps; a package missing there builds fine with
``make binaries`` and breaks only the image build. This needs no build: it follows the imports.
"""

import re
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
MODULE = "example.com/gpu-scheduler-eks/plugin/"
IMPORT = re.compile(r'"' + re.escape(MODULE) + r'([^"]+)"')


def our_imports(package: str) -> set[str]:
    """The packages of this module that ``package`` (a directory under plugin/) imports."""
    found: set[str] = set()
    for source in (PLUGIN / package).glob("*.go"):
        if not source.name.endswith("_test.go"):
            found |= set(IMPORT.findall(source.read_text()))
    return found


def packages_of_the_command() -> set[str]:
    seen, todo = set(), ["cmd/gpu-scheduler"]
    while todo:
        package = todo.pop()
        if package not in seen:
            seen.add(package)
            todo += our_imports(package)
    return seen


def kept_directories() -> set[str]:
    lines = (PLUGIN / ".dockerignore").read_text().splitlines()
    return {line[1:].rstrip("/") for line in lines if line.startswith("!") and line.endswith("/")}


def test_every_package_the_command_imports_is_in_the_build_context() -> None:
    packages = packages_of_the_command()
    assert len(packages) > 3  # the command, the plugins and the policy: the walk found something
    missing = sorted(package for package in packages if package.split("/")[0] not in kept_directories())
    assert not missing, f"plugin/.dockerignore leaves out {missing}: add a '!<dir>/' line for each"
