"""The memory rule's label read out of a Node's JSON bytes, and read into the policy's fact."""

import msgspec
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender_app.node_labels import first_memory_label, memory_label, node_memory
from policy import (
    INSTANCE_TYPE_LABEL,
    KARPENTER_GPU_MEMORY_LABEL,
    NODE_MEMORY_LABEL,
    PolicySettings,
    memory_labels,
    read_memory_labels,
)

SETTINGS = PolicySettings(instance_type_gpu_memory_mib={"g5.xlarge": 22888})
KEYS = memory_labels(SETTINGS)
VALUES = st.one_of(st.none(), st.sampled_from(["40960", "16Gi", "", "0", "g5.xlarge", "p5.48xlarge"]))
LABELS = st.dictionaries(st.sampled_from([*KEYS, "kubernetes.io/os"]), VALUES, max_size=4)


@given(labels=LABELS)
def test_the_label_kept_reads_as_the_whole_labels_object(labels: dict[str, str | None]) -> None:
    kept = first_memory_label(orjson.dumps(labels), KEYS)
    assert node_memory(kept, SETTINGS) == read_memory_labels(labels, SETTINGS)


def test_the_first_scheme_present_is_kept_whatever_its_value() -> None:
    labels = {INSTANCE_TYPE_LABEL: "g5.xlarge", KARPENTER_GPU_MEMORY_LABEL: None}
    assert first_memory_label(orjson.dumps(labels), KEYS) == memory_label(KARPENTER_GPU_MEMORY_LABEL, "")
    assert first_memory_label(b"null", KEYS) is None
    assert first_memory_label(b"{}", KEYS) is None


@pytest.mark.parametrize("raw", [b"[]", b'{"' + NODE_MEMORY_LABEL.encode() + b'": 40960}'])
def test_labels_the_rule_cannot_read_are_refused(raw: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        first_memory_label(raw, KEYS)
