"""``python -m extender_app`` as the container runs it: flags, environment, exit codes, SIGTERM."""

import signal
import subprocess
import sys

import orjson
import pytest

from contracts.release import REPO_ROOT
from extender_app.cli import FLAGS, settings_from
from extender_app.settings import ExtenderSettings
from testbed.eks_nodes import extender_body, make_nodes, make_pod
from testbed.extender import (
    DEADLINE,
    read_json_line,
    read_response,
    reaped,
    refusal,
    request,
    scheduler_context,
    start_process,
    tls_args,
    tls_socket,
    wait_for,
)


def metric(health_port, name):
    text = request(health_port, None, "/metrics", method="GET").body.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def test_help_lists_every_flag_with_its_environment_variable():
    result = subprocess.run(
        [sys.executable, "-m", "extender_app", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps lines
    for flag in FLAGS:
        assert flag.option in text
        assert f"env {flag.env}," in text
    assert "default /etc/extender-tls/tls.crt" in text


def test_defaults_flags_and_environment():
    defaults = settings_from([], {})
    assert defaults == ExtenderSettings()
    assert (defaults.port, defaults.health_port) == (8443, 8080)
    assert defaults.client_ca == "/etc/extender-tls/client-ca.crt"
    from_env = settings_from([], {"EXTENDER_PORT": "9443", "EXTENDER_NODE_MEMORY_LABEL": "x/y"})
    assert from_env.port == 9443
    assert from_env.policy.node_memory_label == "x/y"
    flag_wins = settings_from(["--port", "7443"], {"EXTENDER_PORT": "9443"})
    assert flag_wins.port == 7443
    with pytest.raises(ValueError, match="EXTENDER_MAX_NODES='many'"):
        settings_from([], {"EXTENDER_MAX_NODES": "many"})
    with pytest.raises(ValueError, match="max_nodes must be at least 1"):
        settings_from(["--max-nodes", "0"], {})


def test_the_body_budget_defaults_to_twice_the_body_limit_and_must_hold_one_body():
    assert settings_from(["--max-body-bytes", "1000"], {}).body_budget_bytes == 2000
    assert (
        settings_from(["--max-body-bytes", "1000", "--max-buffered-body-bytes", "5000"], {}).body_budget_bytes
        == 5000
    )
    with pytest.raises(ValueError, match="max_buffered_body_bytes must be 0"):
        settings_from(["--max-body-bytes", "1000", "--max-buffered-body-bytes", "999"], {})


def test_node_cache_flags_and_their_checks():
    defaults = settings_from([], {})
    assert (defaults.node_cache, defaults.kubeconfig, defaults.pod_error_status) == ("off", "", 200)
    assert (defaults.max_cache_staleness, defaults.watch_timeout) == (30.0, 20)
    watch = settings_from(
        [
            "--node-cache",
            "watch",
            "--kubeconfig",
            "/k",
            "--max-cache-staleness",
            "60",
            "--watch-timeout",
            "50",
        ],
        {"EXTENDER_POD_ERROR_STATUS": "400", "EXTENDER_LIST_PAGE_SIZE": "100"},
    )
    assert (watch.node_cache, watch.kubeconfig, watch.pod_error_status) == ("watch", "/k", 400)
    assert (watch.max_cache_staleness, watch.watch_timeout, watch.list_page_size) == (60.0, 50, 100)
    for argv, message in [
        (["--node-cache", "informer"], "node_cache must be one of off, watch, not 'informer'"),
        (["--pod-error-status", "500"], "pod_error_status must be one of 200, 400, not 500"),
        (["--node-cache", "watch", "--watch-timeout", "30"], r"watch_timeout \(30\) must be less than"),
        (["--max-cache-staleness", "0"], "max_cache_staleness must be greater than 0"),
        (["--list-page-size", "0"], "list_page_size must be at least 1"),
        (
            ["--relist-backoff-initial", "5", "--relist-backoff-max", "1"],
            "relist_backoff_max must be at least",
        ),
        (["--node-lookup-timeout", "0"], "node_lookup_timeout must be greater than 0"),
        (["--node-lookup-concurrency", "-1"], r"node_lookup_concurrency must be 0 \(no lookups\) or more"),
        (["--node-lookup-max-per-request", "0"], "node_lookup_max_per_request must be at least 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            settings_from(argv, {})
    lookups = settings_from(["--node-lookup-timeout", "0.5"], {"EXTENDER_NODE_LOOKUP_CONCURRENCY": "0"})
    assert (lookups.node_lookup_timeout, lookups.node_lookup_concurrency) == (0.5, 0)
    # a watch timeout above the staleness limit only matters when watching
    assert settings_from(["--watch-timeout", "30"], {}).watch_timeout == 30


def test_client_ca_without_certificate_exits_non_zero_with_a_clear_message(pki):
    pki.client_ca.write_bytes(b"")
    process = start_process(tls_args(pki))
    _, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 2
    assert f"client CA file {pki.client_ca} holds no certificate" in stderr.decode()


def test_invalid_setting_exits_non_zero(pki):
    process = start_process([*tls_args(pki), "--read-timeout", "0"])
    _, stderr = process.communicate(timeout=DEADLINE)
    assert process.returncode == 2
    assert "read_timeout must be greater than 0" in stderr.decode()


def test_sigterm_finishes_the_request_in_flight_then_exits_zero(pki):
    with reaped(
        start_process(
            tls_args(pki),
            env={"EXTENDER_PORT": "0", "EXTENDER_HEALTH_PORT": "0", "EXTENDER_SHUTDOWN_TIMEOUT": "20"},
        )
    ) as process:
        listening = read_json_line(process.stdout, lambda line: line["msg"] == "listening")
        port, health_port = int(listening["port"]), int(listening["health_port"])
        nodes = make_nodes(20)
        body = extender_body(make_pod(min_memory_mib=40960), nodes)
        with tls_socket(port, scheduler_context(pki)) as sock:
            sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
            sock.sendall(body[: len(body) // 2])
            wait_for(
                lambda: metric(health_port, "gpu_extender_requests_in_flight") == 1, "the request in flight"
            )

            process.send_signal(signal.SIGTERM)
            wait_for(
                lambda: request(health_port, None, "/readyz", method="GET").status == 503, "readiness to drop"
            )
            # no new connections once shutting down
            assert refusal(lambda: tls_socket(port, scheduler_context(pki)).close()) is not None

            sock.sendall(body[len(body) // 2 :])
            status, answer = read_response(sock)
        assert status == 200
        assert len(orjson.loads(answer)["Nodes"]["items"]) == sum(
            int(n["metadata"]["labels"]["training.example.com/gpu-memory-mib"]) >= 40960 for n in nodes
        )
        assert process.wait(DEADLINE) == 0
        assert process.stdout is not None
        lines = [orjson.loads(line) for line in process.stdout.read().splitlines()]
        messages = [line["msg"] for line in lines]
        assert "request" in messages
        assert messages[-1] == "stopped"


def test_sigterm_when_idle_exits_promptly_and_closes_keep_alive_connections(pki):
    with reaped(
        start_process(tls_args(pki), env={"EXTENDER_PORT": "0", "EXTENDER_HEALTH_PORT": "0"})
    ) as process:
        listening = read_json_line(process.stdout, lambda line: line["msg"] == "listening")
        port = int(listening["port"])
        body = extender_body(make_pod(), make_nodes(1))
        with tls_socket(port, scheduler_context(pki)) as idle:
            idle.sendall(
                b"POST /prioritize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body
            )
            assert read_response(idle)[0] == 200
            process.send_signal(signal.SIGTERM)
            assert process.wait(DEADLINE) == 0
