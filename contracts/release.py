"""The release this tree is: CHANGELOG.md's newest version.

``python -m extender_app --version`` reports it, and both images carry it as their
``org.opencontainers.image.version`` label (extender_app/Dockerfile, plugin/Dockerfile; the
gpu-scheduler's own ``--version`` reports the Kubernetes release it is built from, as
kube-scheduler does). A test holds the three together.
"""

VERSION = "0.2.0"
