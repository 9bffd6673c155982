"""The extender's --scoring-strategy: the flag, its variable, a bad value, and /prioritize under best-fit."""

import orjson
import pytest

from extender_app.cli import settings_from
from extender_app.verbs.handlers import VerbLimits, prioritize_verb
from localcluster.host.probes import LOOPBACK
from policy import BEST_FIT, NODE_MEMORY_LABEL, PREFER_LARGER, PolicySettings
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import DEADLINE, start_process


def test_the_strategy_comes_from_the_flag_or_the_variable_and_defaults_to_prefer_larger():
    assert settings_from([], {}).policy.scoring_strategy == PREFER_LARGER
    assert settings_from(["--scoring-strategy", "best-fit"], {}).policy.scoring_strategy == BEST_FIT
    from_env = settings_from([], {"EXTENDER_SCORING_STRATEGY": "best-fit"})
    assert from_env.policy.scoring_strategy == BEST_FIT
    flag_wins = settings_from(["--scoring-strategy=prefer-larger"], {"EXTENDER_SCORING_STRATEGY": "best-fit"})
    assert flag_wins.policy.scoring_strategy == PREFER_LARGER
    with pytest.raises(
        ValueError, match="scoring_strategy must be one of prefer-larger, best-fit, not 'Best-Fit'"
    ):
        settings_from(["--scoring-strategy", "Best-Fit"], {})


def test_an_unknown_strategy_stops_the_process_with_exit_2(pki):
    process = start_process(
        [
            f"--tls-cert={pki.server_cert}",
            f"--tls-key={pki.server_key}",
            f"--client-ca={pki.client_ca}",
            f"--bind={LOOPBACK}",
        ],
        env={"EXTENDER_SCORING_STRATEGY": "smallest"},
    )
    _, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 2
    assert "scoring_strategy must be one of prefer-larger, best-fit, not 'smallest'" in stderr.decode()


def scores_by_label(settings: PolicySettings, min_memory_mib: int | None) -> dict[int, set[int]]:
    nodes = make_nodes(6)  # T4, A10G (two types), L40S, A100 40 GB, H100
    result = prioritize_verb(
        extender_body(make_pod(min_memory_mib=min_memory_mib), nodes),
        VerbLimits(max_nodes=10, policy=settings),
    )
    labels = {n["metadata"]["name"]: int(n["metadata"]["labels"][NODE_MEMORY_LABEL]) for n in nodes}
    scores: dict[int, set[int]] = {}
    for entry in orjson.loads(result.body):
        scores.setdefault(labels[entry["Host"]], set()).add(entry["Score"])
    return scores


def test_prioritize_under_best_fit_ranks_the_smallest_sufficient_gpu_first():
    best_fit = scores_by_label(PolicySettings(scoring_strategy=BEST_FIT), 16384)
    # 100*81920 // (81920 + spare) // 10 for spare 0, 6504, 24576, 29392, 65536
    assert best_fit == {16384: {10}, 22888: {9}, 40960: {7}, 45776: {7}, 81920: {5}}
    no_minimum = scores_by_label(PolicySettings(scoring_strategy=BEST_FIT), None)
    assert no_minimum == {16384: {8}, 22888: {7}, 40960: {6}, 45776: {6}, 81920: {5}}
    prefer_larger = scores_by_label(PolicySettings(), 16384)
    assert prefer_larger == {16384: {2}, 22888: {2}, 40960: {5}, 45776: {5}, 81920: {10}}
