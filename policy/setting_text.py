"""The text forms of the list and table settings, as flags and environment variables carry them.

- a label list (``vendor_memory_labels``): keys joined by commas, ``a/b,c/d``; empty for none;
- the instance-type table (``instance_type_gpu_memory_mib``): ``type=MiB`` pairs joined by commas,
  ``g5.xlarge=22888,p5.48xlarge=81920``; empty for none.

Label keys and instance types hold no ``,`` or ``=``, so neither form needs quoting. Parsing
raises ValueError naming the item it cannot read; ``PolicySettings`` checks the values.
"""

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from policy.integers import parse_go_int64

ITEM_SEPARATOR = ","
PAIR_SEPARATOR = "="


def label_list_text(labels: Iterable[str]) -> str:
    """``labels`` as one comma-separated text."""
    return ITEM_SEPARATOR.join(labels)


def parse_label_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of label keys; "" is the empty list, and an empty item an error."""
    if not text:
        return ()
    labels = tuple(text.split(ITEM_SEPARATOR))
    if "" in labels:
        raise ValueError(f"{text!r}: an empty label key (labels are separated by single commas)")
    return labels


def table_text(table: Mapping[str, int]) -> str:
    """The instance-type table as ``type=MiB`` pairs joined by commas, in the table's order."""
    return ITEM_SEPARATOR.join(
        f"{instance_type}{PAIR_SEPARATOR}{mib}" for instance_type, mib in table.items()
    )


def parse_table(text: str) -> dict[str, int]:
    """``type=MiB,...`` as a table; "" is the empty table. A type given twice is an error."""
    table: dict[str, int] = {}
    if not text:
        return table
    for item in text.split(ITEM_SEPARATOR):
        instance_type, separator, raw = item.partition(PAIR_SEPARATOR)
        mib = parse_go_int64(raw)
        if not separator or not instance_type or mib is None:
            raise ValueError(f"{item!r} is not <instance type>=<MiB per GPU>")
        if instance_type in table:
            raise ValueError(f"instance type {instance_type} is given twice")
        table[instance_type] = mib
    return table


def flag_type(parse: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """``parse`` as an argparse ``type``: its ValueError becomes the flag's error message (argparse
    would otherwise say only "invalid <name> value"). ``name`` is the form's name in that message."""

    def kind(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    kind.__name__ = name
    return kind
