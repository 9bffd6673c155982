"""The burst tests run on their own local cluster, with tests/e2e's fixtures (one definition)."""

from tests.e2e.conftest import cached_cluster, extender_cluster

__all__ = ["cached_cluster", "extender_cluster"]
