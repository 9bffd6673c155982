"""kube-scheduler's feature gates as a local scheduler is started with them."""

from localcluster.services.custom_scheduler import feature_gate_flags


def test_gates_render_as_one_sorted_flag_and_none_as_nothing() -> None:
    assert feature_gate_flags({"NominatedNodeNameForExpectation": False, "A": True}) == (
        "--feature-gates=A=true,NominatedNodeNameForExpectation=false",
    )
    assert feature_gate_flags({}) == ()
