"""The Go load generator (bench/loadgen): built once into .cache/bench, run as a subprocess."""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.load.extender_server import ExtenderUnderTest

LOADGEN_DIR = Path(__file__).resolve().parents[1] / "loadgen"
BUILD_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class LoadResult:
    """One ``loadgen run``: client-side figures (see bench/loadgen/main.go)."""

    verb: str
    concurrency: int
    requests: int
    errors: int
    error_messages: tuple[str, ...]
    seconds: float
    throughput: float
    latency_ms: dict[str, float]
    request_bytes: int
    response_bytes: float


def build_loadgen(cache_dir: Path) -> Path:
    """``go build`` the load generator (Go's build cache makes a rebuild with no change quick)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    binary = cache_dir / "loadgen"
    subprocess.run(
        ["go", "build", "-trimpath", "-o", str(binary), "."],
        cwd=LOADGEN_DIR,
        check=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    return binary


def run_load(
    binary: Path,
    server: ExtenderUnderTest,
    *,
    verb: str,
    body: Path,
    concurrency: int,
    seconds: float,
    count: int = 0,
    warmup: int = 2,
    save_response: Path | None = None,
) -> LoadResult:
    """Send ``verb`` requests with ``body`` from ``concurrency`` keep-alive connections."""
    tls = server.tls
    argv = [
        str(binary),
        "run",
        f"-url={server.url}",
        f"-verb={verb}",
        f"-body={body}",
        f"-ca={tls.ca.ca_file}",
        f"-cert={tls.client.cert}",
        f"-key={tls.client.key}",
        f"-concurrency={concurrency}",
        f"-duration={seconds}s",
        f"-count={count}",
        f"-warmup={warmup}",
    ]
    if save_response is not None:
        argv.append(f"-save-response={save_response}")
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=seconds + 120)
    data: dict[str, Any] = json.loads(out.stdout)
    return LoadResult(
        verb=data["verb"],
        concurrency=data["concurrency"],
        requests=data["requests"],
        errors=data["errors"],
        error_messages=tuple(data["error_messages"] or ()),
        seconds=data["seconds"],
        throughput=data["requests_per_second"],
        latency_ms=data["latency_ms"],
        request_bytes=data["request_bytes"],
        response_bytes=data["response_bytes_mean"],
    )


def codec_timings(
    binary: Path, body: Path, filter_answer: Path | None, prioritize_answer: Path | None, rounds: int = 7
) -> dict[str, Any]:
    """What kube-scheduler spends in encoding/json per call (``loadgen codec``)."""
    argv = [str(binary), "codec", f"-body={body}", f"-rounds={rounds}"]
    if filter_answer is not None:
        argv.append(f"-filter-response={filter_answer}")
    if prioritize_answer is not None:
        argv.append(f"-prioritize-response={prioritize_answer}")
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600)
    result: dict[str, Any] = json.loads(out.stdout)
    return result
