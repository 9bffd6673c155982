"""Every command output the docs show for a cluster-free command is what the command prints now
(``tests/docs/command_samples.py``; regenerate with ``python -m tests.docs.command_samples --write``)."""

import pytest

from tests.docs.command_samples import RUNNABLE, Sample, output_of, samples


def test_each_runnable_command_has_a_sample() -> None:
    assert {sample.command for sample in samples()} == set(RUNNABLE)


@pytest.mark.parametrize("sample", samples(), ids=lambda sample: f"{sample.page.name}:{sample.command}")
def test_the_sample_is_the_commands_output(sample: Sample) -> None:
    assert sample.shown == output_of(sample.command), (
        f"{sample.page.name} shows another output of `{sample.command}`: "
        "run .venv/bin/python -m tests.docs.command_samples --write"
    )
