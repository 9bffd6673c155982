"""`make demo`: the stack deployed with `pulumi up` onto a local control plane, run, and a table
of where each pod went.

Starts etcd and kube-apiserver, creates one simulated node of each instance type in the
inventory, deploys ``Pulumi.local.yaml`` with the real Pulumi engine (the mode and scoring
strategy as stack configuration, the extender's certificates made here and provided to the
stack), checks that a preview right after changes nothing, then runs the custom scheduler (and
the extender) as local processes from what the stack created: the TLS Secrets, the
KubeSchedulerConfiguration ConfigMap and the Deployments' command lines, read back from the API
server (``localcluster.services.deployed_scheduler`` lists what it changes to run outside a cluster).
The stack's admission webhook runs from its Deployment too, and the API server calls it on
loopback (``localcluster.services.webhook``): the sample pods are created through it, and the demo prints
the node affinity each annotated pod was created with, or the webhook's refusal. Submits sample
pods, waits for each outcome and prints it, then starts kube-controller-manager and submits a
same-zone Indexed Job on nodes in three zones (``localcluster.demo.zone_scene``). Exits 0 when
every pod ended as expected.

With ``--images`` (``make demo IMAGES=1``) the extender, the webhook and (plugin mode)
gpu-scheduler run from the images ``make images`` built, with podman on the host network
(``localcluster.host.images``), instead of from source; everything else is the same.
"""

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import kubernetes.client

from contracts.modes import RECOMMENDED_MODE, SCHEDULER_MODES, Autoscaler, SchedulerMode, uses_extender
from explain.answers import render_pod_explanation
from localcluster.demo.autoscaler_scene import AFFINITY_SOURCES, AffinitySource, run_autoscaler_demo
from localcluster.demo.extender_log import refusals_by_pod
from localcluster.demo.karpenter_zone_scene import KARPENTER_JOB_SIZE, run_karpenter_zone_scene
from localcluster.demo.observed import CollectorMissing, check_collector, draw, observing, picture_path
from localcluster.demo.pods import (
    REFUSED_AT_ADMISSION,
    DemoPod,
    capacity_nodes,
    check,
    describe_request,
    sample_pods,
)
from localcluster.demo.text_table import format_table
from localcluster.demo.zone_scene import run_zone_scene
from localcluster.host.images import ImagesNotBuilt, LocalImages
from localcluster.host.team_pki import TeamPki
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.controller_manager import run_controller_manager
from localcluster.plane.inventory import InstanceType, load_inventory
from localcluster.plane.nodes import SimulatedNode, create_nodes, fleet
from localcluster.plane.outcomes import PodOutcome, wait_for_outcomes
from localcluster.plane.topology_labeller import running_topology_labeller
from localcluster.plane.workloads import (
    WORKLOAD_NAMESPACE,
    ensure_namespace,
    restricted_namespace_labels,
    submit_pods_through_admission,
)
from localcluster.services.deployed_scheduler import DeployedRun, describe, running_deployed_scheduler
from localcluster.services.karpenter import running_karpenter
from localcluster.services.pulumi_stack import (
    LOCAL_STACK,
    LOCAL_STACK_FILE,
    DeployFailed,
    DeploySummary,
    EngineMissing,
    deploy_in_fresh_process,
    deployer_kubeconfig,
)
from localcluster.services.webhook import admission_line, created_affinity
from policy import SCORING_STRATEGIES, SCORING_STRATEGY, ScoringStrategy


def report(
    pods: list[DemoPod],
    outcomes: dict[str, PodOutcome],
    nodes: dict[str, InstanceType],
    extender_refusals: dict[str, str],
) -> tuple[str, int]:
    """The table of outcomes, the reasons of the Pending pods, and how many pods went wrong."""
    rows = [("POD", "ASKS FOR", "RESULT", "NODE", "INSTANCE TYPE", "GPUS", "CHECK")]
    reasons = []
    failures = 0
    for pod in pods:
        outcome = outcomes[pod.spec.name]
        problem = check(pod, outcome, nodes)
        failures += bool(problem)
        asks = describe_request(pod.spec)
        if outcome.bound:
            node = nodes[outcome.node or ""]
            gpus = (
                f"{node.gpu_count}x {node.gpu_name}, {node.gpu_memory_mib} MiB each" if node.has_gpu else "-"
            )
            rows.append((pod.spec.name, asks, "Bound", outcome.node or "", node.name, gpus, problem or "ok"))
            continue
        result = "Refused" if outcome.reason == REFUSED_AT_ADMISSION else "Pending"
        rows.append((pod.spec.name, asks, result, "-", "-", "-", problem or "ok"))
        reasons.append(f"  {pod.spec.name}: {outcome.reason}: {outcome.message}")
        refusal = extender_refusals.get(f"{WORKLOAD_NAMESPACE}/{pod.spec.name}")
        if refusal:
            reasons.append(
                f"    (kube-scheduler drops the extender's error body; the extender logged: {refusal})"
            )
    text = format_table(rows)
    if reasons:
        text += (
            "\n\nWhy the Pending pods wait (their PodScheduled condition) or were refused (the API"
            " server's answer):\n" + "\n".join(reasons)
        )
    return text, failures


def admission_report(api: kubernetes.client.ApiClient, pods: list[DemoPod], refused: dict[str, str]) -> str:
    """What admission did to each annotated pod: the required node affinity it was created with
    (the webhook's patch, which autoscalers read), or the refusal."""
    lines = ["Admission (the webhook, for pods with the minimum or the capacity-type annotation):"]
    for pod in pods:
        name = pod.spec.name
        if pod.spec.min_memory is None and pod.spec.capacity_type is None:
            continue
        affinity = "" if name in refused else created_affinity(api, name)
        lines.append(admission_line(name, affinity, refused.get(name, "")))
    return "\n".join(lines)


@contextlib.contextmanager
def interrupts_as_exit() -> Iterator[None]:
    """Ctrl-C (SIGINT) and SIGTERM end the demo, stopping every process on the way out.

    SIGINT is handled even when it was inherited as ignored, as a shell does for its background
    jobs: the demo is stopped the same way however it was started."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous_term = signal.signal(signal.SIGTERM, handler)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)


def indented(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def print_deployment(deployment: DeploySummary) -> None:
    """The closing lines of ``pulumi up`` and of the preview after it."""
    print(indented(deployment.up))
    print("$ pulumi preview --expect-no-changes")
    print(indented(deployment.preview), flush=True)


WEBHOOK_ENABLED_KEY = "webhook.enabled"
"""The stack setting the Karpenter control run turns off (docs/configuration.md)."""
LOCAL_AUTOSCALERS: tuple[Autoscaler, ...] = ("none", "karpenter")
"""What the demo can run locally (Cluster Autoscaler needs AWS)."""


def run(
    mode: SchedulerMode,
    bin_dir: Path,
    per_type: int,
    scoring_strategy: ScoringStrategy = SCORING_STRATEGY,
    *,
    autoscaler: Autoscaler = "none",
    affinity: AffinitySource = "webhook",
    images: LocalImages | None = None,
    observe: bool = False,
) -> int:
    """The fixed fleet of every inventory type, or (``autoscaler="karpenter"``) the system node
        only and Karpenter launching GPU nodes (``localcluster.demo.autoscaler_scene``); ``affinity="none"``
        deploys the stack with ``webhook.enabled=false`` (Karpenter's control run); ``images``: our
    programs run from the built images; ``observe``: the CloudWatch pipeline beside the demo and
    the dashboard's picture drawn at the end (``localcluster.demo.observed``)."""
    started = time.monotonic()
    inventory = load_inventory()
    types = [t for t in inventory.values() if autoscaler == "none" or not t.has_gpu]
    simulated = fleet(types, per_type)
    if autoscaler == "none":
        simulated += capacity_nodes()
    settings: dict[str, str] = {"schedulerMode": mode, "scoringStrategy": scoring_strategy}
    if autoscaler == "karpenter" and affinity == "none":
        settings[WEBHOOK_ENABLED_KEY] = "false"
    print(f"Starting etcd and kube-apiserver (binaries from {bin_dir})...", flush=True)
    with (
        interrupts_as_exit(),
        start_control_plane(bin_dir) as plane,
        running_topology_labeller(plane),
    ):
        api = plane.api_client()
        create_nodes(api, simulated)
        ensure_namespace(api, WORKLOAD_NAMESPACE, restricted_namespace_labels())
        stack_dir = plane.work_dir / "pulumi"
        print(
            f"Created {len(simulated)} simulated nodes (the topology labeller writes their network-node "
            "labels, as the AWS cloud-controller-manager does on EKS).\n"
            f"$ pulumi up --yes --stack {LOCAL_STACK}   "
            f"({LOCAL_STACK_FILE} + {', '.join(f'{key}={value}' for key, value in settings.items())}, "
            f"existingCluster.kubeconfig and certificates.provided made here; file backend in {stack_dir})",
            flush=True,
        )
        kubeconfig, certificates = deployer_kubeconfig(plane), TeamPki.new().values()
        print_deployment(deploy_in_fresh_process(stack_dir, kubeconfig, certificates, settings))
        print(f"Starting the custom scheduler in {mode} mode from what the stack created...", flush=True)
        if images is not None:
            ours = (
                f"{images.extender} (extender, webhook)"
                if uses_extender(mode)
                else (f"{images.extender} (webhook), {images.gpu_scheduler}")
            )
            print(f"  our programs from the built images (podman, host network): {ours}", flush=True)
        with running_deployed_scheduler(
            plane, bin_dir, mode, plane.work_dir / "deployed", images
        ) as deployed:
            print(describe(deployed, plane.work_dir), flush=True)
            picture: Path | None = None
            with contextlib.ExitStack() as observed:
                observation = observed.enter_context(observing(plane, bin_dir, deployed)) if observe else None
                if observation is not None:
                    print(
                        "Observing: the OpenTelemetry Collector scrapes the webhook, the extender (extender "
                        "modes) and the scheduler and sends EMF to CloudWatch (a local moto server)...",
                        flush=True,
                    )
                if autoscaler == "karpenter":
                    text, failures = _karpenter_pods(plane, bin_dir, affinity)
                else:
                    text, failures = _fixed_fleet_pods(plane, bin_dir, deployed, mode, simulated)
                if observation is not None:
                    print("Reading the dashboard's widgets back from CloudWatch...", flush=True)
                    picture = draw(observation, mode, picture_path(mode))
    print()
    print(text)
    print()
    verdict = "every pod ended as expected" if not failures else f"{failures} pod(s) did not end as expected"
    elapsed = time.monotonic() - started
    how = scoring_strategy if autoscaler == "none" else f"Karpenter, affinity: {affinity}"
    print(f"{mode} mode: {verdict} ({how}; {elapsed:.1f}s; all processes stopped).")
    if picture is not None:
        print(f"The dashboard's widgets as CloudWatch holds the demo's metrics: {picture.resolve()}")
    return 0 if not failures else 1


def _fixed_fleet_pods(
    plane: ControlPlane,
    bin_dir: Path,
    deployed: DeployedRun,
    mode: SchedulerMode,
    simulated: list[SimulatedNode],
) -> tuple[str, int]:
    """The sample pods on one node of each type: the table and the explanations of the Pending."""
    api = plane.api_client()
    nodes = {node.name: node.instance_type for node in simulated}
    pods = sample_pods(mode, webhook=deployed.webhook is not None)
    scheduler = deployed.scheduler
    refused = submit_pods_through_admission(api, [pod.spec for pod in pods])
    print(f"Submitted {len(pods)} pods; waiting for the scheduler...", flush=True)
    created = [pod.spec.name for pod in pods if pod.spec.name not in refused]
    outcomes = wait_for_outcomes(api, WORKLOAD_NAMESPACE, created)
    outcomes |= {
        name: PodOutcome(name, None, REFUSED_AT_ADMISSION, message) for name, message in refused.items()
    }
    print(admission_report(api, pods, refused), flush=True)
    refusals = refusals_by_pod(scheduler.extender.process.log_path) if scheduler.extender else {}
    text, failures = report(pods, outcomes, nodes, refusals)
    for name in created:
        if not outcomes[name].bound:
            answer = render_pod_explanation(api, WORKLOAD_NAMESPACE, name)
            text += f"\n\n$ python -m explain pod {WORKLOAD_NAMESPACE}/{name}\n{answer}"
    if deployed.webhook is not None:
        print(
            "Starting kube-controller-manager (the Job controller); submitting a same-zone Indexed Job "
            "of 8 pods to nodes in three zones...",
            flush=True,
        )
        with run_controller_manager(plane, bin_dir):
            scene, scene_failures = run_zone_scene(api, mode)
        text += f"\n\n{scene}"
        failures += scene_failures
    return text, failures


def _karpenter_pods(plane: ControlPlane, bin_dir: Path, affinity: AffinitySource) -> tuple[str, int]:
    """Karpenter and kwok started, the autoscaler demo's pods submitted one by one; then (through
    the webhook) the same-zone job from zero GPU nodes."""
    print("Starting Karpenter (kwok provider), kwok and the not-ready taint lifter...", flush=True)
    with running_karpenter(plane, bin_dir, plane.work_dir / "karpenter") as karpenter:
        offered = ", ".join(
            f"{name} ({t.gpu_count}x {t.gpu_name} {t.gpu_memory_mib} MiB)"
            for name, t in karpenter.instance_types.items()
        )
        print(f"Karpenter may launch: {offered}", flush=True)
        print(f"Submitting pods one at a time (affinity: {affinity})...", flush=True)
        text, failures = run_autoscaler_demo(plane.api_client(), affinity)
        if affinity == "webhook":
            print(
                "Deleting those pods and NodeClaims; starting kube-controller-manager (the Job controller); "
                f"submitting a same-zone Indexed Job of {KARPENTER_JOB_SIZE} whole-node workers to a cluster "
                "without GPU nodes...",
                flush=True,
            )
            with run_controller_manager(plane, bin_dir):
                scene, scene_failures = run_karpenter_zone_scene(
                    plane.api_client(), karpenter.instance_types.values()
                )
            text += f"\n\n{scene}"
            failures += scene_failures
        return text, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=SCHEDULER_MODES, default=RECOMMENDED_MODE)
    parser.add_argument(
        "--bin-dir", type=Path, default=Path(".cache/bin"), help="where make binaries put them"
    )
    parser.add_argument("--nodes-per-type", type=int, default=1, help="simulated nodes of each instance type")
    parser.add_argument(
        "--scoring-strategy",
        choices=SCORING_STRATEGIES,
        default=SCORING_STRATEGY,
        help="how GPU pods rank the nodes that fit (the extender's flag / the plugin's arg)",
    )
    parser.add_argument(
        "--autoscaler",
        choices=LOCAL_AUTOSCALERS,
        default="none",
        help="karpenter: start with the system node only and let real Karpenter launch GPU nodes",
    )
    parser.add_argument(
        "--affinity",
        choices=AFFINITY_SOURCES,
        default="webhook",
        help="with --autoscaler karpenter: webhook: the deployed admission webhook adds the memory node "
        "affinity to the annotated pods; none: the control run (webhook.enabled=false, annotation only)",
    )
    parser.add_argument(
        "--observe",
        action="store_true",
        help="run the OpenTelemetry Collector beside the demo, send the metrics to a local CloudWatch "
        "(moto) and draw the dashboard's widgets into a PNG (make otelcol builds the collector)",
    )
    parser.add_argument(
        "--images",
        action="store_true",
        help="run the extender, the webhook and gpu-scheduler from the images `make images` built (podman)",
    )
    args = parser.parse_args(argv)
    try:
        images = LocalImages.for_current_sources() if args.images else None
    except ImagesNotBuilt as missing:
        print(missing, file=sys.stderr)
        return 1
    if args.observe:
        try:
            check_collector(args.bin_dir)
        except CollectorMissing as missing:
            print(missing, file=sys.stderr)
            return 1
    try:
        return run(
            args.mode,
            args.bin_dir,
            args.nodes_per_type,
            args.scoring_strategy,
            autoscaler=args.autoscaler,
            affinity=args.affinity,
            images=images,
            observe=args.observe,
        )
    except EngineMissing as missing:
        print(f"the Pulumi engine is not built: {missing}", file=sys.stderr)
        return 1
    except DeployFailed as failed:
        print(f"pulumi failed; every process was stopped:\n{failed}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; every process was stopped", file=sys.stderr)
        return 130
