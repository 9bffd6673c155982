"""contracts/ is a leaf: the extender image and the Pulumi program both import it, so it imports
nothing of ours and no third-party package (the image ships only what extender_app needs)."""

import ast
import sys
from pathlib import Path

import pytest

import contracts
from contracts.server import NODE_CACHE_WATCH_FLAG, flag, tls_flags
from extender_app.cli import build_parser, settings_from

PACKAGE_DIR = Path(contracts.__file__).parent
MODULES = sorted(PACKAGE_DIR.glob("*.py"))


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.name)
def test_imports_only_the_standard_library(module: Path) -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or ".").split(".")[0])
    assert imported <= sys.stdlib_module_names


def test_flags_built_here_are_ones_the_program_parses() -> None:
    args = [*tls_flags("/tls", client_ca=True), NODE_CACHE_WATCH_FLAG, flag("kubeconfig", "/k")]
    settings = settings_from(args, {})
    assert (settings.tls_cert, settings.tls_key, settings.client_ca) == (
        "/tls/tls.crt",
        "/tls/tls.key",
        "/tls/client-ca.crt",
    )
    assert (settings.node_cache, settings.kubeconfig) == ("watch", "/k")
    assert not build_parser().parse_args(tls_flags("/tls", client_ca=False)).client_ca
