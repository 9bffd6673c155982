"""The house's own checks: which package imports which, one name per meaning, no dead code."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

OUR_PACKAGES = (
    "policy",
    "contracts",
    "render",
    "extender_app",
    "components",
    "explain",
    "localcluster",
    "testbed",
    "bench",
)
"""The project's top-level Python packages, lowest layer first."""
