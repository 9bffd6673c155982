"""The demo's readable tables: left-aligned columns under a header and a rule."""

from collections.abc import Sequence


def format_table(rows: Sequence[tuple[str, ...]]) -> str:
    """``rows[0]`` is the header; every row has the same number of cells."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
