"""The extender's flags are written once: docs/extender.md shows the table made from ``cli.FLAGS``."""

import re
from dataclasses import fields

from extender_app.cli import FLAGS, flag_default, flag_default_text, settings_from
from extender_app.flag_table import BEGIN, DOCS_PAGE, END, render, replace_table
from extender_app.settings import ExtenderSettings
from policy import PolicySettings


def test_every_setting_has_exactly_one_flag() -> None:
    assert [flag.name for flag in FLAGS if not flag.policy] == [
        item.name for item in fields(ExtenderSettings) if item.name != "policy"
    ]
    assert [flag.name for flag in FLAGS if flag.policy] == [item.name for item in fields(PolicySettings)]


def test_the_committed_table_is_the_rendered_one() -> None:
    page = DOCS_PAGE.read_text(encoding="utf-8")
    assert page.count(BEGIN) == 1
    assert page.count(END) == 1
    assert replace_table(page) == page, (
        "docs/extender.md's flag table differs from extender_app/settings.py: "
        "run .venv/bin/python -m extender_app.flag_table"
    )


def test_the_table_lists_each_flag_once_with_the_default_the_parser_applies() -> None:
    rows = [line for line in render().splitlines() if line.startswith("| `--")]
    assert len(rows) == len(FLAGS)
    parsed = settings_from([], {})
    for flag, row in zip(FLAGS, rows, strict=True):
        option, env, default = re.findall(r"\| ([^|]+) ", row)[:3]
        assert (option, env) == (f"`{flag.option}`", f"`{flag.env}`")
        applied = getattr(parsed.policy if flag.policy else parsed, flag.name)
        assert applied == flag_default(flag)
        shown = flag_default_text(flag)
        assert default.startswith(f"`{shown}`") or (shown == "" and default == "empty")
