"""The extender under mocks, in both extender modes: its Deployment, its arguments (read back by
its own parser), the API token and the node-reader RBAC only in extender-cached mode, its
PodDisruptionBudget, Service and NetworkPolicy."""

from typing import Any

import pulumi_kubernetes as k8s
import pytest

from components.certificates import SERVER_SECRET
from components.extender import Extender, ExtenderComponentArgs, extender_args
from components.stack_config import EXTENDER_RESOURCES, ExtenderDeploymentSettings
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME
from contracts.server import HEALTH_PORT, NODE_CACHE_WATCH_FLAG
from extender_app.cli import build_parser, settings_from
from render.node_reader import NODE_READER_ROLE
from render.scheduler_config import EXTENDER_PORT
from tests.components.conftest import run_with
from tests.components.mocks import StackRun, run_stack
from tests.components.pod_specs import assert_restricted, containers, pod_template


def test_extender_deployment(any_extender_run: StackRun) -> None:
    deployment = any_extender_run.kubernetes_object("Deployment", EXTENDER_SERVICE)
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert pod["serviceAccountName"] == EXTENDER_SERVICE
    assert_restricted(pod)
    spread = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
    assert set(spread) == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
    for constraint in spread.values():
        assert constraint["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    assert pod["nodeSelector"]["training.example.com/node-pool"] == "system"
    assert not pod.get("tolerations")
    [container] = pod["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health", "scheme": "HTTP"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health", "scheme": "HTTP"}
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"https": EXTENDER_PORT, "health": HEALTH_PORT}
    [volume] = pod["volumes"]
    assert volume["secret"] == {"secretName": SERVER_SECRET, "defaultMode": 0o440}
    assert container["volumeMounts"] == [
        {"name": volume["name"], "mountPath": "/etc/extender-tls", "readOnly": True}
    ]
    assert container["resources"] == {
        "requests": {"cpu": EXTENDER_RESOURCES.cpu_request, "memory": EXTENDER_RESOURCES.memory_request},
        "limits": {"memory": EXTENDER_RESOURCES.memory_limit},
    }
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["timeoutSeconds"] >= 3


def test_the_api_token_is_mounted_only_in_extender_cached_mode(any_extender_run: StackRun) -> None:
    """extender mode gets every Node in the request and has no token; extender-cached reads
    the API itself, with its ServiceAccount's token."""
    cached = any_extender_run.outputs["schedulerMode"] == "extender-cached"
    pod = pod_template(any_extender_run, EXTENDER_SERVICE)["spec"]
    account = any_extender_run.kubernetes_object("ServiceAccount", EXTENDER_SERVICE)
    assert pod["automountServiceAccountToken"] is cached
    assert account["automountServiceAccountToken"] is cached


def test_extender_args_per_mode(any_extender_run: StackRun) -> None:
    mode = any_extender_run.outputs["schedulerMode"]
    [container] = containers(any_extender_run.kubernetes_object("Deployment", EXTENDER_SERVICE))
    stateless = extender_args(ExtenderDeploymentSettings(), "extender")
    assert not [arg for arg in stateless if arg.startswith("--node-cache")]
    if mode == "extender-cached":
        assert container["args"] == [*stateless, NODE_CACHE_WATCH_FLAG]
    else:
        assert container["args"] == stateless


def test_node_reader_rbac_exists_only_in_extender_cached_mode(run: StackRun) -> None:
    roles = [
        r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r.plain["metadata"]["name"] != SCHEDULER_NAME  # the scheduler's own, in every mode
    ]
    bindings = [
        r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
        if r.plain["metadata"]["name"] == NODE_READER_ROLE
    ]
    if run.outputs["schedulerMode"] != "extender-cached":
        assert roles == bindings == []
        return
    [role] = roles
    assert role["metadata"]["name"] == NODE_READER_ROLE == "scheduler-extender-node-reader"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    assert "aggregationRule" not in role
    [binding] = bindings
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": NODE_READER_ROLE,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": EXTENDER_SERVICE, "namespace": NAMESPACE}
    ]
    pod = pod_template(run, EXTENDER_SERVICE)["spec"]
    assert pod["serviceAccountName"] == EXTENDER_SERVICE


def test_extender_flags_are_ones_its_cli_accepts(extender_run: StackRun) -> None:
    [container] = containers(extender_run.kubernetes_object("Deployment", EXTENDER_SERVICE))
    parsed = build_parser().parse_args(container["args"])
    settings = settings_from(container["args"], {})
    mounted = container["volumeMounts"][0]["mountPath"]
    assert parsed.tls_cert == f"{mounted}/tls.crt"
    assert parsed.tls_key == f"{mounted}/tls.key"
    assert parsed.client_ca == f"{mounted}/client-ca.crt"
    assert (settings.port, settings.health_port) == (EXTENDER_PORT, HEALTH_PORT)


def test_extender_limits_reach_its_flags() -> None:
    run = run_with(
        {"schedulerMode": "extender", "extender": {"replicas": 3, "maxBodyBytes": 33554432, "maxNodes": 2000}}
    )
    deployment = run.kubernetes_object("Deployment", EXTENDER_SERVICE)
    [container] = containers(deployment)
    settings = settings_from(container["args"], {})
    assert (settings.max_body_bytes, settings.max_nodes) == (33554432, 2000)
    assert deployment["spec"]["replicas"] == 3


def test_a_smaller_body_limit_allows_a_smaller_memory_limit() -> None:
    """The memory limit must hold what the body limit lets the extender keep at once
    (96 MiB + 3 x 32 MiB = 192 MiB here); raising one without the other is refused at parse time."""
    resources = {"requests": {"memory": "128Mi"}, "limits": {"memory": "192Mi"}}
    run = run_with(
        {"schedulerMode": "extender", "extender": {"maxBodyBytes": 32 * 2**20, "resources": resources}}
    )
    [container] = containers(run.kubernetes_object("Deployment", EXTENDER_SERVICE))
    assert container["resources"]["limits"] == {"memory": "192Mi"}
    assert settings_from(container["args"], {}).max_body_bytes == 32 * 2**20


def test_a_body_budget_reaches_its_flag_and_sets_the_memory_floor() -> None:
    """With maxBufferedBodyBytes the floor is 96 MiB + the budget + one body limit: 128 + 128 + 96
    = 352 MiB here, below the default 3 x 128 + 96 = 480 MiB."""
    resources = {"requests": {"memory": "256Mi"}, "limits": {"memory": "352Mi"}}
    run = run_with(
        {
            "schedulerMode": "extender",
            "extender": {"maxBufferedBodyBytes": 128 * 2**20, "resources": resources},
        }
    )
    [container] = containers(run.kubernetes_object("Deployment", EXTENDER_SERVICE))
    assert settings_from(container["args"], {}).body_budget_bytes == 128 * 2**20
    assert (
        settings_from(extender_args(ExtenderDeploymentSettings(), "extender"), {}).max_buffered_body_bytes
        == 0
    )


def test_extender_pdb_service_and_network_policy(any_extender_run: StackRun) -> None:
    run = any_extender_run
    selector = run.kubernetes_object("Deployment", EXTENDER_SERVICE)["spec"]["selector"]
    pdb = run.kubernetes_object("PodDisruptionBudget", EXTENDER_SERVICE)["spec"]
    assert pdb == {"minAvailable": 1, "selector": selector}
    service = run.kubernetes_object("Service", EXTENDER_SERVICE)["spec"]
    assert service["selector"] == selector["matchLabels"]
    assert service["ports"] == [
        {"name": "https", "port": EXTENDER_PORT, "targetPort": "https", "protocol": "TCP"}
    ]
    policy = run.kubernetes_object("NetworkPolicy", EXTENDER_SERVICE)["spec"]
    assert policy["podSelector"] == selector
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    if run.outputs["schedulerMode"] == "extender-cached":
        # TCP 443 only (the API server), to any address: no DNS, nothing else.
        assert policy["egress"] == [{"ports": [{"protocol": "TCP", "port": 443}]}]
    else:
        assert policy.get("egress", []) == []
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": EXTENDER_PORT}]
    [peer] = rule["from"]
    assert peer["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}}
    scheduler_labels = pod_template(run, SCHEDULER_NAME)["metadata"]["labels"]
    assert peer["podSelector"]["matchLabels"] == {"app": SCHEDULER_NAME}
    assert peer["podSelector"]["matchLabels"].items() <= scheduler_labels.items()


def test_the_component_is_made_from_its_args_alone() -> None:
    """Every input arrives through ``ExtenderComponentArgs``: the image, the annotations on every object, the
    node selector, the mode's flags, the provider and what the objects wait for."""
    annotations = {"example.com/owner": "platform"}

    def program() -> dict[str, Any]:
        provider = k8s.Provider("cluster")
        waited_for = k8s.core.v1.Namespace("waited-for")
        Extender(
            "extender",
            ExtenderComponentArgs(
                mode="extender-cached",
                settings=ExtenderDeploymentSettings(max_nodes=300),
                image="registry.example.com/extender:v1",
                provider=provider,
                depends_on=(waited_for,),
                object_annotations=annotations,
                node_selector={"pool": "system"},
            ),
        )
        return {}

    run = run_stack(program)
    deployment = run.kubernetes_object("Deployment", EXTENDER_SERVICE)
    [container] = containers(deployment)
    assert container["image"] == "registry.example.com/extender:v1"
    assert container["args"] == extender_args(ExtenderDeploymentSettings(max_nodes=300), "extender-cached")
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "system"}
    kubernetes = [resource for resource in run.resources if resource.type.startswith("kubernetes:")]
    assert {resource.plain["kind"] for resource in kubernetes} >= {"Deployment", "Service", "ClusterRole"}
    for resource in kubernetes:
        if resource.name == "waited-for":
            continue
        assert resource.plain["metadata"]["annotations"] == annotations, resource.name
        assert ("kubernetes:core/v1:Namespace", "waited-for") in resource.depends_on, resource.name
        assert resource.provider.endswith("::cluster"), resource.name


def test_plugin_mode_has_no_extender_args() -> None:
    def program() -> dict[str, Any]:
        with pytest.raises(ValueError, match="plugin mode runs no extender"):
            ExtenderComponentArgs(
                mode="plugin", settings=ExtenderDeploymentSettings(), image="x", provider=k8s.Provider("p")
            )
        return {}

    run_stack(program)
