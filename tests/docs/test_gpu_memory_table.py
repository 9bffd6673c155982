"""docs/training-users.md's GPU-to-MiB table is the stack's instance-type table, rendered."""

import re

from render.ec2_catalogue import snapshot_gpu_memory_table
from tests.docs.gpu_memory_table import BEGIN, DOCS_PAGE, END, render, replace_table

ROW = re.compile(
    r"^\| (?P<gpu>[^|]+) \| (?P<mib>\d+) \| [\d.]+ \| [^|]+ \| (?P<types>[^|]+) \|$", re.MULTILINE
)
TYPE = re.compile(r"([\w.-]+) \((\d+)\)")


def test_the_committed_table_is_the_rendered_one() -> None:
    page = DOCS_PAGE.read_text(encoding="utf-8")
    assert page.count(BEGIN) == 1
    assert page.count(END) == 1
    assert replace_table(page) == page, (
        "docs/training-users.md's GPU table differs from the EC2 snapshot: "
        "run .venv/bin/python -m tests.docs.gpu_memory_table --write"
    )


def test_every_type_of_the_stack_table_is_shown_once_with_its_mib() -> None:
    shown: dict[str, int] = {}
    for row in ROW.finditer(render()):
        for instance_type, _ in TYPE.findall(row["types"]):
            assert instance_type not in shown, instance_type
            shown[instance_type] = int(row["mib"])
    assert shown == dict(snapshot_gpu_memory_table())


def test_an_a10g_is_22888_mib_so_24_gib_fits_none() -> None:
    rows = {row["gpu"]: int(row["mib"]) for row in ROW.finditer(render())}
    assert rows["A10G"] == 22888
    assert rows["A10G"] < 24 * 1024
