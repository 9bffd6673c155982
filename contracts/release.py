"""The release this tree is: CHANGELOG.md's newest version.

``python -m extender_app --version`` reports it, and both images carry it as their
``org.opencontainers.image.version`` label (extender_app/Dockerfile, plugin/Dockerfile; the
gpu-scheduler's own ``--version`` reports the Kubernetes release it is built from, as
kube-scheduler does). A test holds the three together.
"""

from pathlib import Path

VERSION = "0.3.0"

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The root of this tree: where the local run, the test bed and the benchmarks find its files."""
