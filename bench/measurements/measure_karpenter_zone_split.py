"""How often real Karpenter splits a same-zone job across zones (docs/karpenter-local.md#same-zone-jobs);
not part of the test run.

    python -m bench.measurements.measure_karpenter_zone_split [--runs 10] [--pools single|zonal]
        [--mode extender] [--workload job|ordinary]

Each run is the demo's same-zone job (``localcluster.demo.karpenter_zone_scene``: 4 pods of 8 GPUs of
at least 80 GiB, through the admission webhook) submitted at once to a fresh control plane with
the system node only, Karpenter (kwok) offering every type in three zones at equal prices. Pools:
``zonal`` is the local default (one NodePool per zone); ``single`` is one NodePool for every zone.
The run waits until every member is bound, then lists the NodeClaims. Per run: the NodeClaims'
count and zones, the zone requirement of each (two values: Karpenter left the zone open) and the
pods' zones; then how many runs kept the job in one zone on the NodeClaims it needs.

``--workload ordinary`` submits the same pods without the job's label and annotations (no pod
affinity): what the pools do to GPU pods with no zone constraint (docs/zones.md#what-perzone-costs).
The last line then counts the runs whose NodeClaims all landed in one zone.
"""

import argparse
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from contracts.modes import SCHEDULER_MODES, SchedulerMode
from localcluster.demo.karpenter_zone_scene import (
    KARPENTER_JOB_SIZE,
    MIN_MEMORY_MIB,
    POD_GPUS,
    claims_needed,
    densest_fit,
    job_members,
)
from localcluster.plane.nodes import SimulatedNode
from localcluster.plane.outcomes import wait_for_outcomes
from localcluster.plane.workloads import (
    WORKLOAD_NAMESPACE,
    PodSpecification,
    create_through_admission,
    pod_manifest,
)
from localcluster.services.karpenter import (
    karpenter_nodes,
    launched_node_claims,
    node_pool_manifest,
    running_karpenter,
)
from localcluster.services.webhook import start_webhook
from policy.job_zone import ZONE_LABEL
from testbed.e2e_cluster import INVENTORY, e2e_cluster

JOB_BIND_SECONDS = 180.0
"""Longest wait for the whole job to be bound in one run."""
SYSTEM = SimulatedNode("system-1", INVENTORY["m5.xlarge"], "us-east-1a")


def zone_requirement(claim: Any) -> list[str]:
    """The values of the NodeClaim's zone requirement (what Karpenter allowed it)."""
    for requirement in claim["spec"].get("requirements", []):
        if requirement["key"] == ZONE_LABEL:
            values: list[str] = requirement.get("values", [])
            return values
    return []


def ordinary_pods() -> list[dict[str, Any]]:
    """The job's pods without the job: the same GPUs and minimum, no label, no zone policy."""
    return [
        pod_manifest(PodSpecification(f"ordinary-{index}", min_memory=str(MIN_MEMORY_MIB), gpus=POD_GPUS))
        for index in range(KARPENTER_JOB_SIZE)
    ]


def one_run(bin_dir: Path, work_dir: Path, mode: SchedulerMode, pools: str, workload: str) -> bool:
    """One job (or its ordinary pods) on a fresh cluster; prints the run's line and returns whether
    it was kept whole (ordinary pods: whether all NodeClaims are in one zone)."""
    with e2e_cluster(bin_dir, work_dir, mode) as cluster:
        cluster.add_nodes(SYSTEM)
        start_webhook(cluster.plane, work_dir / "webhook")
        cluster.start()
        node_pools = [node_pool_manifest()] if pools == "single" else None
        with running_karpenter(cluster.plane, bin_dir, work_dir / "karpenter", node_pools=node_pools) as run:
            names = []
            for manifest in job_members() if workload == "job" else ordinary_pods():
                refusal = create_through_admission(cluster.api, manifest)
                if refusal:
                    raise SystemExit(f"{manifest['metadata']['name']} refused: {refusal}")
                names.append(manifest["metadata"]["name"])
            outcomes = wait_for_outcomes(
                cluster.api, WORKLOAD_NAMESPACE, names, JOB_BIND_SECONDS, bound_only=True
            )
            claims = launched_node_claims(cluster.api)
            zone_of = {
                node.metadata.name: node.metadata.labels[ZONE_LABEL] for node in karpenter_nodes(cluster.api)
            }
            needed = claims_needed(
                KARPENTER_JOB_SIZE,
                POD_GPUS,
                densest_fit(POD_GPUS, MIN_MEMORY_MIB, run.instance_types.values()),
            )
    claim_zones = Counter(claim["metadata"]["labels"].get(ZONE_LABEL, "?") for claim in claims)
    pod_zones = Counter(zone_of[outcome.node or ""] for outcome in outcomes.values())
    open_zones = [",".join(zone_requirement(claim)) for claim in claims if len(zone_requirement(claim)) > 1]
    if workload == "ordinary":
        print(f"{len(claims)} NodeClaims by zone {dict(sorted(claim_zones.items()))}", flush=True)
        return len(claim_zones) == 1
    whole = len(claim_zones) == 1 and len(pod_zones) == 1 and len(claims) <= needed
    print(
        f"{len(claims)} NodeClaims (needs {needed}) by zone {dict(sorted(claim_zones.items()))}; "
        f"pods {dict(sorted(pod_zones.items()))}; NodeClaims left two or more zones: {open_zones or 'none'}"
        f" -> {'one zone, none extra' if whole else 'SPLIT'}",
        flush=True,
    )
    return whole


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pools", choices=("single", "zonal"), default="single")
    parser.add_argument("--mode", choices=SCHEDULER_MODES, default="extender")
    parser.add_argument("--workload", choices=("job", "ordinary"), default="job")
    parser.add_argument("--bin-dir", type=Path, default=Path(".cache/bin"))
    args = parser.parse_args(argv)
    kept = 0
    for index in range(args.runs):
        print(
            f"run {index + 1}/{args.runs} ({args.pools} pools, {args.mode} mode, {args.workload}): ",
            end="",
            flush=True,
        )
        with tempfile.TemporaryDirectory(prefix="karpenter-zone-split-") as work:
            kept += one_run(args.bin_dir.resolve(), Path(work), args.mode, args.pools, args.workload)
    outcome = (
        "every NodeClaim in one zone"
        if args.workload == "ordinary"
        else "the job in one zone on the NodeClaims it needs"
    )
    print(f"{args.pools} pools: {outcome} in {kept} of {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
