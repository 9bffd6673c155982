"""Every command output the docs show is generated: a runnable command's by
``tests/docs/command_samples.py``, any other by the test that runs it on the local control plane
(``tests/docs/cluster_samples.py``). The comparison itself happens in those tests."""

import re
from collections import Counter

import pytest

from localcluster.demo.text_table import format_table
from tests.docs.cluster_samples import MARKER, PAGES, ROOT, WRITERS, normalise, shown_samples
from tests.docs.command_samples import RUNNABLE

FENCED = re.compile(r"^```[^\n]*\n(?P<body>.*?)^```", flags=re.DOTALL | re.MULTILINE)


def test_each_sample_is_shown_once_and_has_a_writer() -> None:
    names = Counter(sample.name for sample in shown_samples())
    assert [name for name, count in names.items() if count > 1] == []
    assert set(names) == set(WRITERS)


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_the_writer_checks_its_sample(name: str) -> None:
    """The test file named as the sample's writer passes the sample's name to ``DocSamples.check``."""
    path = ROOT / WRITERS[name].split("::")[0]
    assert f'"{name}"' in path.read_text(), f"{path.relative_to(ROOT)} never checks sample {name!r}"


def test_every_shown_command_output_is_generated() -> None:
    """A fenced block that starts with ``$ COMMAND`` is a runnable sample or a marked one."""
    unchecked = []
    for page in PAGES:
        text = page.read_text()
        marked = {match.start("shown") for match in MARKER.finditer(text)}
        for block in FENCED.finditer(text):
            first = block["body"].split("\n", 1)[0]
            if not first.startswith("$ "):
                continue
            runnable = block[0].startswith("```text\n") and first.removeprefix("$ ") in RUNNABLE
            if not runnable and block.start("body") not in marked:
                unchecked.append(f"{page.relative_to(ROOT)}: {first}")
    assert unchecked == []


def test_placeholders_in_a_table_keep_it_aligned() -> None:
    rows = [("POD", "NODE", "CHECK"), ("a", "kwok-node-long-random-1234", "ok"), ("bb", "kwok-node-x", "ok")]
    text = "Table:\n" + format_table(rows) + "\n\non kwok-node-x at 127.0.0.1:4000\n"
    shown = normalise(text, {r"kwok-\S+": "<node>", r"(127\.0\.0\.1:)\d+": r"\1<port>"})
    expected = [("POD", "NODE", "CHECK"), ("a", "<node>", "ok"), ("bb", "<node>", "ok")]
    assert shown == "Table:\n" + format_table(expected) + "\n\non <node> at 127.0.0.1:<port>\n"


def test_a_line_right_after_a_table_is_no_row_of_it() -> None:
    table = format_table([("pod", "node"), ("llm-0-ab1cd", "scene-b-1")])
    text = f"{table}\nJobZone placed the whole job in us-east-1b, the one zone that holds it.\n"
    shown = normalise(text, {r"\b(llm-\d+)-[a-z0-9]{5}\b": r"\1-xxxxx"})
    assert shown == text.replace("llm-0-ab1cd", "llm-0-xxxxx")
