"""CPU profile (pprof) of kube-scheduler or gpu-scheduler while it schedules the benchmark's pods.

    python -m bench.measurements.profile_scheduler --bin-dir .cache/bin --mode plugin
        [--qps 1000] [--seconds 10] [--appended-profile]

``--mode extender-cached`` also starts the extender as that mode runs it (node cache, mutual TLS);
``--mode vanilla-affinity`` is kube-scheduler with the pods carrying the node affinity the admission
webhook writes (the baseline ``bench.scale`` compares plugin mode with). As in the benchmarks, the
pods of every mode but vanilla carry that affinity, as the webhook (on by default) admits them.
In extender-cached mode py-spy samples the extender over the same window and its top frames are
printed after the scheduler's profile.

Starts a local control plane with the benchmark's realistic nodes and pods (bench/fleet/cluster_load.py),
starts the scheduler, fetches /debug/pprof/profile from its secure port with the admin
certificate (kube-scheduler serves it by default, behind delegated authorization), and prints
``go tool pprof -top``. Not part of ``make bench``: the findings in RESULTS.md quote its output.
"""

import argparse
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from bench.fleet.cluster_load import create_nodes, create_pods, gpu_pods, realistic_nodes
from bench.load.bind_watch import BindWatch
from bench.measurements.e2e_throughput import (
    BINARIES,
    SCHEDULER_VERBOSITY,
    VANILLA_AFFINITY,
    ExtenderLink,
    Setting,
    admitted_with_affinity,
    scheduler_document,
)
from bench.measurements.profile_extender import PY_SPY, SAMPLE_RATE, print_top
from localcluster.host.probes import LOOPBACK
from localcluster.plane.control_plane import ControlPlane, start_control_plane
from localcluster.plane.workloads import WORKLOAD_NAMESPACE, ensure_namespace, restricted_namespace_labels
from localcluster.services.custom_scheduler import (
    extender_tls,
    grant_scheduler_rbac,
    scheduler_process_flags,
    start_extender_for,
)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bin-dir", type=Path, default=Path(".cache/bin"))
    parser.add_argument(
        "--mode", choices=("vanilla", VANILLA_AFFINITY, "plugin", "extender-cached"), default="plugin"
    )
    parser.add_argument("--qps", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--grouped", action="store_true")
    parser.add_argument(
        "--appended-profile",
        action="store_true",
        help="plugin mode with GPUScheduler only at filter and score, after the default plugins"
        " (the rendered profile runs it first, and at preFilter too)",
    )
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument(
        "--save", type=Path, help="keep the profile here (for go tool pprof -peek, -cum, ...)"
    )
    return parser.parse_args()


def main() -> None:
    arguments = _arguments()
    with (
        tempfile.TemporaryDirectory(prefix="profile-") as directory,
        start_control_plane(arguments.bin_dir, Path(directory)) as plane,
    ):
        api = plane.api_client()
        ensure_namespace(api, WORKLOAD_NAMESPACE, restricted_namespace_labels())
        grant_scheduler_rbac(plane)
        create_nodes(api, realistic_nodes(arguments.nodes))
        link = _extender_link(plane, Path(directory)) if arguments.mode == "extender-cached" else None
        create_pods(
            api,
            gpu_pods(arguments.pods, grouped=arguments.grouped),
            with_affinity=admitted_with_affinity(arguments.mode),
        )
        setting = Setting(
            arguments.mode,
            arguments.qps,
            grouped=arguments.grouped,
            rendered_profile=not arguments.appended_profile,
        )
        config = Path(directory) / "config.yaml"
        config.write_text(yaml.safe_dump(scheduler_document(plane, setting, link), sort_keys=False))
        (port,) = plane.processes.reserve_ports(1)
        watch = BindWatch(api, WORKLOAD_NAMESPACE).start()
        plane.processes.start(
            "scheduler",
            [
                str(arguments.bin_dir / BINARIES[setting.mode]),
                f"--config={config}",
                *scheduler_process_flags(plane.scheduler.kubeconfig, port),
                f"--v={SCHEDULER_VERBOSITY}",
            ],
        )
        profile = Path(directory) / "cpu.pprof"
        started = time.monotonic()
        fetcher = threading.Thread(target=_fetch_profile, args=(plane, port, arguments.seconds, profile))
        spy_samples = Path(directory) / "extender-samples.txt"
        spy = None if link is None else _py_spy(link, spy_samples, arguments.seconds)
        fetcher.start()
        if spy is not None:
            spy.start()
        fetcher.join()
        if spy is not None:
            spy.join()
        watch.wait_for(arguments.pods, 600, lambda: True)
        watch.stop()
        times = sorted(watch.bound_at.values())
        print(
            f"{setting.label}: {len(times)} pods bound, "
            f"{(len(times) - 1) / (times[-1] - times[0]):.1f} pods/s; "
            f"profile of the first {arguments.seconds} s after start (started {started:.0f})"
        )
        top = subprocess.run(
            ["go", "tool", "pprof", "-top", f"-nodecount={arguments.top}", str(profile)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(top.stdout)
        if spy is not None:
            print("extender (py-spy, same window):")
            print_top(spy_samples, arguments.top)
        if arguments.save is not None:
            arguments.save.write_bytes(profile.read_bytes())


def _fetch_profile(plane: ControlPlane, port: int, seconds: int, profile: Path) -> None:
    """Write the scheduler's CPU profile of the next ``seconds`` to ``profile`` (retried while it starts)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed serving certificate on loopback
    context.load_cert_chain(str(plane.admin.files.cert), str(plane.admin.files.key))
    url = f"https://{LOOPBACK}:{port}/debug/pprof/profile?seconds={seconds}"
    for _ in range(50):
        try:
            with urllib.request.urlopen(url, context=context, timeout=seconds + 30) as reply:
                profile.write_bytes(reply.read())
                return
        except OSError:
            time.sleep(0.1)


def _py_spy(link: ExtenderLink, samples: Path, seconds: int) -> threading.Thread:
    """A thread that records the extender with py-spy for ``seconds`` into ``samples`` (raw format)."""
    record = [
        str(PY_SPY),
        "record",
        f"--pid={link.extender.process.popen.pid}",
        f"--output={samples}",
        "--format=raw",
        f"--duration={seconds}",
        f"--rate={SAMPLE_RATE}",
    ]
    options = {"check": True, "capture_output": True}
    return threading.Thread(target=subprocess.run, args=(record,), kwargs=options)


def _extender_link(plane: ControlPlane, directory: Path) -> ExtenderLink:
    """The extender as extender-cached mode runs it, and the TLS material to reach it."""
    tls = extender_tls(directory / "extender-tls")
    return ExtenderLink(extender=start_extender_for(plane, "extender-cached", tls), tls=tls)


if __name__ == "__main__":
    main()
