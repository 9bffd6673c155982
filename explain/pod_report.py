"""``explain pod``: the verdicts (``pod_verdicts``) and the advice (``pod_advice``) as one answer."""

from collections.abc import Sequence
from dataclasses import dataclass

from explain.ec2_gpu_data import Ec2GpuData
from explain.pod_advice import advice
from explain.pod_verdicts import JsonObject, PodVerdicts, judge_pod
from policy import PolicySettings


@dataclass(frozen=True, kw_only=True)
class PodExplanation(PodVerdicts):
    """Everything ``explain pod`` reports: the verdicts, what would have to change, the EC2 data's source.

    Keyword-only, as ``PodVerdicts``: a field with a default may be added to either.
    """

    changes: tuple[str, ...]
    ec2_source: str


def explain_pod(
    pod: JsonObject,
    nodes: Sequence[JsonObject],
    assigned_pods: Sequence[JsonObject],
    *,
    settings: PolicySettings,
    ec2: Ec2GpuData,
    scheduler_name: str,
) -> PodExplanation:
    """The policy's verdict on every node for ``pod``, and what would have to change."""
    verdicts = judge_pod(pod, nodes, assigned_pods, settings=settings, ec2=ec2, scheduler_name=scheduler_name)
    return PodExplanation(**vars(verdicts), changes=advice(verdicts, settings, ec2), ec2_source=ec2.source)
