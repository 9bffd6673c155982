"""The container images ``make images`` builds, run with podman instead of the programs from source.

``make demo IMAGES=1`` and the image tests start the extender, the webhook and gpu-scheduler
this way: the same arguments and ports as the processes from source, on the host network (the
control plane listens on loopback), with a read-only root file system and the image's own user
(65532). Every file a command line names (``--flag=/path``), and every file such a YAML file
names in turn (a kubeconfig's certificates, a scheduler configuration's kubeconfig), is
bind-mounted read-only at the same path and handed to that user (podman's ``U`` option), as a
Secret volume with ``fsGroup`` is in the cluster.
"""

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from contracts.release import REPO_ROOT
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE, ImageSource, image_tag

IMAGE_STORE = REPO_ROOT / ".cache" / "images"
"""Where ``make images`` keeps its container storage and the podman configuration for it."""
STOP_SIGNAL_TIMEOUT = 10
"""Seconds ``podman stop`` waits after SIGTERM before SIGKILL (the pod's grace period)."""


class ImagesNotBuilt(RuntimeError):
    """The images for the current sources are not in the store: ``make images`` builds them."""


def podman_env(store: Path = IMAGE_STORE) -> dict[str, str]:
    """The environment podman needs for the store ``make images`` wrote (storage driver, runtime,
    cgroup manager and ulimits that work on this kind of machine)."""
    for name in ("storage.conf", "containers.conf"):
        if not (store / name).is_file():
            raise ImagesNotBuilt(f"no {store / name}: run `make images` first")
    return {
        **os.environ,
        "CONTAINERS_STORAGE_CONF": str(store / "storage.conf"),
        "CONTAINERS_CONF": str(store / "containers.conf"),
    }


class PodmanFailed(subprocess.CalledProcessError):
    """A podman command failed; its message carries podman's own error output."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr}"


def podman_binary() -> str:
    """The podman executable (``make images`` installs it)."""
    found = shutil.which("podman")
    if found is None:
        raise ImagesNotBuilt("podman is not installed: run `make images`")
    return found


PODMAN_TIMEOUT_SECONDS = 120.0
"""How long one podman command (not a running container) may take."""


def podman(*args: str, store: Path = IMAGE_STORE, timeout: float = PODMAN_TIMEOUT_SECONDS) -> str:
    """Run ``podman args`` on the store; its standard output, or PodmanFailed."""
    argv = [podman_binary(), *args]
    done = subprocess.run(  # noqa: S603 - podman itself, arguments from this package
        argv, env=podman_env(store), capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise PodmanFailed(done.returncode, argv, done.stdout, done.stderr)
    return done.stdout


def built_image(source: ImageSource, store: Path = IMAGE_STORE) -> str:
    """``localhost/<repository>:<content tag>`` for the current sources, as ``make images`` tags it
    (the tag the Pulumi program would push); ImagesNotBuilt when it is not in the store."""
    image = f"localhost/{source.repository}:{image_tag(source)}"
    try:
        podman("image", "exists", image, store=store)
    except subprocess.CalledProcessError:
        raise ImagesNotBuilt(f"{image} is not built for the current sources: run `make images`") from None
    return image


def files_named(args: Sequence[str]) -> list[Path]:
    """The existing files ``--flag=/path`` arguments name, and (recursively) the absolute paths of
    existing files inside those that are YAML (kubeconfigs, scheduler configurations)."""
    found: list[Path] = []
    pending = [Path(value) for arg in args if (value := arg.partition("=")[2]).startswith("/")]
    while pending:
        path = pending.pop()
        if not path.is_file() or path in found:
            continue
        found.append(path)
        if path.suffix in (".yaml", ".yml", ".kubeconfig"):
            try:
                document = yaml.safe_load(path.read_text())
            except (yaml.YAMLError, UnicodeDecodeError):
                continue
            pending += [Path(value) for value in _strings(document) if value.startswith("/")]
    return found


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


@dataclass(frozen=True)
class LocalImages:
    """The two built images and the store they are in."""

    extender: str
    gpu_scheduler: str
    store: Path = IMAGE_STORE

    @classmethod
    def for_current_sources(cls, store: Path = IMAGE_STORE) -> "LocalImages":
        """The images built from the sources as they are now; ImagesNotBuilt otherwise."""
        return cls(built_image(EXTENDER_IMAGE, store), built_image(GPU_SCHEDULER_IMAGE, store), store)

    def env(self) -> dict[str, str]:
        return podman_env(self.store)

    def run_argv(self, image: str, name: str, args: Sequence[str], *, read_only: bool = True) -> list[str]:
        """``podman run`` of ``image`` in the foreground with ``args``: host network, the files the
        arguments name mounted at their paths; SIGTERM to podman reaches the program."""
        mounts = [f"--volume={path}:{path}:ro,U" for path in files_named(args)]
        return [
            podman_binary(),
            "run",
            "--rm",
            "--replace",
            f"--name={name}-{uuid.uuid4().hex[:12]}",
            "--network=host",
            f"--stop-timeout={STOP_SIGNAL_TIMEOUT}",
            *(["--read-only", "--read-only-tmpfs=false"] if read_only else []),
            *mounts,
            image,
            *args,
        ]
