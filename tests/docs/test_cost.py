"""docs/cost.md's totals for the example stacks follow from the stack files and the page's own
price table: a change to an example's network or system nodes, or to a price, fails here until the
page is updated."""

import re
from pathlib import Path

import pytest

from components.kubernetes_versions import plugin_kubernetes_version
from components.stack_config import NewVpc, parse_stack_config
from tests.components.conftest import example_stack_values

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cost.md"
HOURS_PER_MONTH = 730
PRICE_ROW = re.compile(r"^\| (?P<item>[^|]+?) \| (?P<usd>[0-9.]+) \| per [^|]+ \|$", flags=re.MULTILINE)


def prices() -> dict[str, float]:
    """The page's price table: item (its first word, e.g. ``m6i.large``, ``NAT``) -> USD."""
    return {row["item"].split()[0]: float(row["usd"]) for row in PRICE_ROW.finditer(PAGE.read_text())}


def monthly(stack_file: str) -> float:
    """The stack's own monthly cost by the page's rules: control plane, NAT gateways and their
    addresses, the system nodes at their desired size (first instance type) and their disks."""
    price = prices()
    values, secret_keys = example_stack_values(ROOT / stack_file)
    config = parse_stack_config(values, "example", plugin_kubernetes_version(), secret_keys)
    network = config.network
    assert isinstance(network, NewVpc)
    gateways = 1 if network.nat_gateways == "single" else network.availability_zones
    system = config.system_node_group
    nodes = system.scaling.desired_size
    hourly = (
        price["EKS"] + gateways * (price["NAT"] + price["Public"]) + nodes * price[system.instance_types[0]]
    )
    return round(hourly * HOURS_PER_MONTH + nodes * system.disk_size_gib * price["gp3"], 2)


@pytest.mark.parametrize("stack_file", ["Pulumi.dev.yaml", "Pulumi.prod.yaml"])
def test_the_pages_total_is_the_stacks(stack_file: str) -> None:
    row = re.search(
        rf"^\| `{re.escape(stack_file)}` \| [^|]+ \| (?P<usd>[0-9.]+) \|$", PAGE.read_text(), re.MULTILINE
    )
    assert row is not None, f"docs/cost.md has no total for {stack_file}"
    assert float(row["usd"]) == monthly(stack_file)
