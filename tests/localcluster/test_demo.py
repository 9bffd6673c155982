"""`make demo` as a user runs it, and what it leaves behind when interrupted or killed."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.modes import RECOMMENDED_MODE, SCHEDULER_MODES
from localcluster.demo.observed import picture_path
from localcluster.demo.pods import sample_pods
from localcluster.host.images import LocalImages
from localcluster.host.processes import STOP_GRACE_SECONDS
from localcluster.host.waiting import wait_for
from localcluster.plane.workloads import WORKLOAD_NAMESPACE
from localcluster.services.cloudwatch_pipeline import COLLECTOR
from policy import CAPACITY_TYPE_ANNOTATION, CAPACITY_TYPE_LABEL, MIN_MEMORY_ANNOTATION, NODE_MEMORY_LABEL
from render.webhook_config import WEBHOOK_NAME
from tests.docs.cluster_samples import DEMO_TIES, DEMO_VOLATILE, KARPENTER_VOLATILE, DocSamples, normalise

REPO_ROOT = Path(__file__).resolve().parents[2]


def demo_command(bin_dir: Path, mode: str) -> list[str]:
    return [sys.executable, "-m", "localcluster.demo", "--mode", mode, "--bin-dir", str(bin_dir)]


def run_demo(bin_dir: Path, mode: str, *extra: str) -> str:
    """The demo's output; a non-zero exit fails the test with all of it."""
    result = subprocess.run(
        [*demo_command(bin_dir, mode), *extra],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("mode", SCHEDULER_MODES)
def test_demo_prints_every_pod_and_exits_zero(bin_dir: Path, mode: str, doc_samples: DocSamples) -> None:
    stdout = run_demo(bin_dir, mode)
    assert_every_pod_reported(stdout, mode)
    if mode == RECOMMENDED_MODE:  # what `make demo` prints, shown in docs/demo.md and docs/explain.md
        shown = normalise(stdout, DEMO_VOLATILE)
        doc_samples.check("demo", f"$ make demo\n{shown}", ties=DEMO_TIES)
        doc_samples.check("explain-pod-no-fit", explanation_of(shown, "min-200gib"), ties=DEMO_TIES)
        admission = shown[shown.index("Admission (the webhook") :].split("\n")
        refusal = next(line for line in admission if line.startswith("  invalid-annotation: refused"))
        doc_samples.check("webhook-admission", "\n".join([*admission[:2], "  ...", refusal, ""]))
    if mode == "extender":  # docs/demo.md shows how its reasons differ
        why = stdout[stdout.index("Why the Pending pods wait") :]
        why = why[: why.index("\n\n") + 1]
        doc_samples.check("demo-extender-why", f"$ make demo MODE=extender\n...\n{why}...\n")


def explanation_of(stdout: str, pod: str) -> str:
    """The demo's ``explain pod`` answer for ``pod``, from its command line to the next part."""
    start = stdout.index(f"$ python -m explain pod {WORKLOAD_NAMESPACE}/{pod}\n")
    ends = [stdout.find(marker, start + 1) for marker in ("\n\n$ ", "\n\nSame-zone job")]
    return stdout[start : min(end for end in ends if end > 0) + 1]


@pytest.mark.parametrize("mode", ["extender", "plugin"])
def test_demo_from_the_built_images(bin_dir: Path, images: LocalImages, mode: str) -> None:
    """``make demo IMAGES=1``: the extender (extender mode), the webhook, and gpu-scheduler (plugin
    mode) from the images, with the same report as from source."""
    stdout = run_demo(bin_dir, mode, "--images")
    ours = images.extender if mode == "extender" else images.gpu_scheduler
    assert f"our programs from the built images (podman, host network): {images.extender}" in stdout
    assert ours in stdout
    assert_every_pod_reported(stdout, mode)


def test_the_observed_demo_draws_the_dashboard_into_a_png(bin_dir: Path) -> None:
    """``make demo OBSERVE=1``: the same report, then the path of a PNG drawn in this run."""
    if not (bin_dir / COLLECTOR).is_file():
        pytest.fail(f"missing {COLLECTOR} in {bin_dir}: run `make otelcol` first")
    picture = REPO_ROOT / picture_path("plugin")
    picture.unlink(missing_ok=True)
    stdout = run_demo(bin_dir, "plugin", "--observe")
    assert_every_pod_reported(stdout, "plugin")
    last = stdout.rstrip().splitlines()[-1]
    assert last == f"The dashboard's widgets as CloudWatch holds the demo's metrics: {picture.resolve()}"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def assert_every_pod_reported(stdout: str, mode: str) -> None:
    """Each sample pod's line, refusal, explanation or affinity as the mode must report it."""
    for pod in sample_pods(mode):  # type: ignore[arg-type]
        assert f"\n{pod.spec.name} " in stdout
        if pod.expect_refused:  # by the stack's admission webhook, with the policy's message
            refusal = f'  {pod.spec.name}: refused: admission webhook "{WEBHOOK_NAME}" denied the request: '
            annotation = CAPACITY_TYPE_ANNOTATION if pod.spec.capacity_type else MIN_MEMORY_ANNOTATION
            assert refusal + f"{annotation}: {pod.expect_in_reason}" in stdout
        elif not pod.expect_bound:  # explain's answer follows the table
            assert f"$ python -m explain pod ml-training/{pod.spec.name}\nPod ml-training/" in stdout
        elif pod.minimum_mib:  # the webhook's affinity, read back from the stored pod
            affinity = (
                f"created with required node affinity {NODE_MEMORY_LABEL} Gt {pod.minimum_mib - 1} (or "
            )
            assert f"  {pod.spec.name}: {affinity}" in stdout
        elif pod.spec.capacity_type == "spot":  # the capacity-type choice as affinity
            affinity = f"created with required node affinity {CAPACITY_TYPE_LABEL} In spot (or "
            assert f"  {pod.spec.name}: {affinity}" in stdout
    # The same-zone scene, an Indexed Job: plugin mode places the whole job in the one zone that holds it.
    assert "Same-zone job: 8 pods of 1 GPU (>= 40 GiB), the Indexed Job llm" in stdout
    assert len(re.findall(r"\nllm-\d-\w{5} +\d +(scene-\S+|Pending) ", stdout)) == 8
    if mode == "plugin":
        assert "JobZone placed the whole job in us-east-1b" in stdout
    else:
        assert "One zone, as the pod affinity demands" in stdout
    assert f"{mode} mode: every pod ended as expected" in stdout


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, frontier = set(), [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def work_dirs_of(pids: set[int]) -> set[Path]:
    """The demo's temporary folders, from etcd's --data-dir."""
    return {
        Path(arg.split("=", 1)[1]).parent
        for pid in pids
        for arg in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        if arg.startswith("--data-dir=")
    }


def command_name(pid: int) -> str:
    """The program a process runs (its pid when it has gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() or str(pid)
    except OSError:
        return str(pid)


def freeze_the_scheduler(children: set[int]) -> None:
    """SIGSTOP the demo's kube-scheduler: no pod can be placed any more, so the demo cannot finish
    before the signal the test sends it, however fast the scheduler was until then."""
    (scheduler,) = (pid for pid in children if command_name(pid).endswith("kube-scheduler"))
    os.kill(scheduler, signal.SIGSTOP)


def start_demo_until_the_cluster_runs(bin_dir: Path) -> tuple[subprocess.Popen[str], set[int]]:
    """The demo started as a shell starts a background job: with SIGINT ignored, which it inherits."""
    command = shlex.join(demo_command(bin_dir, "extender"))
    demo = subprocess.Popen(
        ["bash", "-c", f"trap '' INT; exec {command}"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert demo.stdout is not None
    for line in demo.stdout:
        if line.startswith("Submitted"):
            break
    else:
        pytest.fail("the demo ended before submitting its pods")
    children = descendants(demo.pid)
    assert len(children) >= 4, "etcd, kube-apiserver, the extender and kube-scheduler"
    return demo, children


def wait_for_exit(demo: subprocess.Popen[str], children: set[int]) -> int:
    """The demo's exit status once it has stopped its children one after another, each given
    STOP_GRACE_SECONDS after SIGTERM before SIGKILL; past that bound (and a margin for a loaded
    machine) the test fails naming the children still running and what the demo printed."""
    deadline = STOP_GRACE_SECONDS * len(children) + 30
    try:
        return demo.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        running = sorted(command_name(pid) for pid in alive(children))
        demo.kill()
        output, _ = demo.communicate()
        pytest.fail(
            f"the demo had not exited {deadline:.0f}s after the signal; still running: "
            f"{', '.join(running) or 'none of its children'}; it printed after submitting:\n{output[-3000:]}"
        )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_demo_stops_every_process_and_removes_its_files(bin_dir: Path, signum: int) -> None:
    demo, children = start_demo_until_the_cluster_runs(bin_dir)
    work_dirs = work_dirs_of(children)
    assert work_dirs
    freeze_the_scheduler(children)  # stopped children are stopped all the same (SIGCONT follows SIGTERM)
    demo.send_signal(signum)
    assert wait_for_exit(demo, children) != 0
    assert not alive(children)
    assert not any(directory.exists() for directory in work_dirs)


def test_a_killed_demo_takes_its_processes_with_it(bin_dir: Path) -> None:
    """SIGKILL leaves no chance to clean up; the children's parent-death signal ends them."""
    demo, children = start_demo_until_the_cluster_runs(bin_dir)
    work_dirs = work_dirs_of(children)
    os.kill(demo.pid, signal.SIGKILL)
    demo.wait(timeout=30)
    wait_for(lambda: not alive(children), 30, "the demo's children to exit")
    for directory in work_dirs:  # nobody else will: the demo was killed
        shutil.rmtree(directory)


@pytest.mark.parametrize(
    ("affinity", "rows"),
    [
        (
            "webhook",
            [
                r"min-24gib +>= 24576 MiB +g6e\.xlarge +45776 +Bound ",
                r"min-80gib +>= 81920 MiB +p5\.48xlarge",
                rf"  min-40gib: created with required node affinity {NODE_MEMORY_LABEL} Gt 40959 \(or ",
                r'  invalid-annotation: refused: admission webhook ".+" denied the request: ',
                # the same-zone scene: its NodeClaims, its bindings and the one-zone result
                r"Same-zone job from zero GPU nodes: 4 pods of 8 GPUs .* It needs 4 nodes",
                r"\n(gpu-(us-east-1[abc])-\w+ +p5\.48xlarge +\2 +kwok-\S+\n){4}\n",
                r"the Indexed Job llm-karpenter \(its pods made by the Job controller\)",
                r"\n(llm-karpenter-\d-\w{5} +kwok-\S+ +us-east-1[abc]\n){4}\n",
                r"One zone: all 4 NodeClaims and all 4 pods in us-east-1[abc]; "
                r"4 NodeClaims for a job that needs 4: no extra ones\.",
            ],
        ),
        (
            "none",
            [
                r"min-40gib +>= 40960 MiB +g4dn\.xlarge +16384 +Pending ",
                r"  min-40gib: created with required node affinity \(none\)\n",
            ],
        ),
    ],
)
def test_the_karpenter_demo_launches_by_the_affinity_and_the_control_run_shows_the_failure(
    bin_dir: Path, affinity: str, rows: list[str], doc_samples: DocSamples
) -> None:
    """`make demo AUTOSCALER=karpenter [AFFINITY=none]`: real Karpenter from the system node alone,
    the pods annotation-only: the deployed webhook adds the affinity (none: webhook.enabled=false)."""
    command = [*demo_command(bin_dir, RECOMMENDED_MODE), "--autoscaler", "karpenter", "--affinity", affinity]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    for row in rows:
        assert re.search(row, result.stdout), row
    assert f"every pod ended as expected (Karpenter, affinity: {affinity};" in result.stdout
    shown = claims_sorted(normalise(result.stdout, KARPENTER_VOLATILE))
    if affinity == "webhook":  # docs/karpenter-local.md shows both runs
        doc_samples.check("karpenter-demo", f"$ make demo AUTOSCALER=karpenter\n{shown}")
        claims = shown[shown.index("NodeClaims Karpenter made for the job:\n") :].split("\n\n")[0]
        one_zone = next(line for line in shown.split("\n") if line.startswith("One zone: "))
        doc_samples.check("zones-karpenter-job", f"{claims}\n...\n{one_zone}\n")
    else:
        control = shown[shown.index("Submitting pods one at a time") :]
        doc_samples.check(
            "karpenter-demo-control", f"$ make demo AUTOSCALER=karpenter AFFINITY=none\n...\n{control}"
        )


def claims_sorted(text: str) -> str:
    """The NodeClaim lines (listed by their random names) in the order of what they show."""
    lines = text.split("\n")
    claims = sorted(line for line in lines if line.startswith("  nodeclaim/"))
    kept = iter(claims)
    return "\n".join(next(kept) if line.startswith("  nodeclaim/") else line for line in lines)
