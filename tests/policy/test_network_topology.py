"""The network topology choice (the pod API) and a node's place in the network: vectors, settings."""

from typing import Any

import pytest

from policy import PolicyError
from policy.job_zone import declared_job
from policy.network_topology import (
    DEFAULT_TOPOLOGY_SETTINGS,
    INVALID_TOPOLOGY,
    LAYER_LABEL_PREFIX,
    NETWORK_TOPOLOGY_ANNOTATION,
    PREFERRED_CHOICE,
    TOPOLOGY_WITHOUT_ZONE_POLICY,
    TopologyChoice,
    TopologySettings,
    node_path,
    parse_topology_choice,
)
from tests.vectors import load_file

DOCUMENT = load_file("topology_cases.json")
CHOICE_CASES: list[dict[str, Any]] = DOCUMENT["choices"]


def settings_of(case: dict[str, Any]) -> TopologySettings:
    return TopologySettings(**{**DOCUMENT["settings"], **case.get("settings", {})})


def test_vector_file_settings_are_the_defaults() -> None:
    assert settings_of({}) == DEFAULT_TOPOLOGY_SETTINGS
    names = [case["name"] for case in CHOICE_CASES]
    assert len(names) == len(set(names))
    assert {next(iter(case["expect"])) for case in CHOICE_CASES} == {"choice", "error"}


@pytest.mark.parametrize("case", CHOICE_CASES, ids=lambda case: case["name"])
def test_choice_case(case: dict[str, Any]) -> None:
    settings = settings_of(case)
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(PolicyError) as raised:
            parse_topology_choice(case["value"], settings)
        assert str(raised.value) == expect["error"]
        return
    choice = parse_topology_choice(case["value"], settings)
    assert str(choice) == expect["choice"]
    assert parse_topology_choice(str(choice), settings) == choice, "the written form reads back"


def test_preferred_is_the_default_choice() -> None:
    assert parse_topology_choice(None) == PREFERRED_CHOICE == TopologyChoice()
    assert PREFERRED_CHOICE.preferred
    assert not TopologyChoice(required_layer=2).preferred


@pytest.mark.parametrize(
    ("labels", "path"),
    [
        ({}, ()),
        (
            {
                f"{LAYER_LABEL_PREFIX}1": "nn-a",
                f"{LAYER_LABEL_PREFIX}2": "nn-b",
                f"{LAYER_LABEL_PREFIX}3": "nn-c",
            },
            ("nn-a", "nn-b", "nn-c"),
        ),
        ({f"{LAYER_LABEL_PREFIX}1": "nn-a", f"{LAYER_LABEL_PREFIX}3": "nn-c"}, ("nn-a",)),
        ({f"{LAYER_LABEL_PREFIX}1": "", f"{LAYER_LABEL_PREFIX}2": "nn-b"}, ()),
        (
            {f"{LAYER_LABEL_PREFIX}{layer}": f"nn-{layer}" for layer in range(1, 6)},
            ("nn-1", "nn-2", "nn-3", "nn-4"),
        ),
    ],
    ids=["unlabelled", "three-layers", "a-gap-ends-the-path", "empty-counts-as-absent", "at-most-max-layers"],
)
def test_node_path_reads_layers_from_the_top_without_gaps(
    labels: dict[str, str], path: tuple[str, ...]
) -> None:
    assert node_path(labels) == path


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match=r"max_layers must be an integer 1\.\.16"):
        TopologySettings(max_layers=0)
    with pytest.raises(ValueError, match=r"max_layers must be an integer 1\.\.16"):
        TopologySettings(max_layers=True)
    with pytest.raises(ValueError, match="annotation must be a non-empty string"):
        TopologySettings(annotation="")
    assert TopologySettings(layer_label_prefix="example.com/tier-").layer_label(2) == "example.com/tier-2"


def member(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": {"training.example.com/job": "llm"}, "annotations": annotations}}


def test_a_same_zone_job_carries_its_choice() -> None:
    same_zone = {"training.example.com/zone-policy": "same-zone", "training.example.com/job-size": "4"}
    job = declared_job(member(same_zone))
    assert job is not None
    assert job.topology == PREFERRED_CHOICE
    job = declared_job(member({**same_zone, NETWORK_TOPOLOGY_ANNOTATION: "required:layer-3"}))
    assert job is not None
    assert job.topology == TopologyChoice(required_layer=3)
    with pytest.raises(PolicyError, match=f"^{INVALID_TOPOLOGY.format(layers=4)}$"):
        declared_job(member({**same_zone, NETWORK_TOPOLOGY_ANNOTATION: "nearby"}))
    custom = TopologySettings(annotation="example.com/topology", max_layers=2)
    job = declared_job(member({**same_zone, "example.com/topology": "required:layer-2"}), topology=custom)
    assert job is not None
    assert job.topology == TopologyChoice(required_layer=2)


def test_a_choice_without_same_zone_is_refused() -> None:
    with pytest.raises(PolicyError, match=f"^{TOPOLOGY_WITHOUT_ZONE_POLICY}$"):
        declared_job(member({NETWORK_TOPOLOGY_ANNOTATION: "preferred"}))
    with pytest.raises(PolicyError, match=f"^{INVALID_TOPOLOGY.format(layers=4)}$"):
        declared_job(member({NETWORK_TOPOLOGY_ANNOTATION: "bogus"})), "the value is checked first"
    assert declared_job(member({})) is None
