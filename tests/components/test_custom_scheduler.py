"""The custom kube-scheduler under mocks, in every mode: its RBAC, the ConfigMap equal to the
shared renderer's output, its Deployment, and the checksums that roll it when its
configuration or its client certificate changes."""

import yaml

from components.certificates import CLIENT_SECRET, certificate_checksum
from components.custom_scheduler import (
    CLIENT_TLS_CHECKSUM_ANNOTATION,
    CONFIG_CHECKSUM_ANNOTATION,
    CONFIG_DIR,
    CONFIG_FILE,
)
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME
from contracts.modes import uses_extender
from contracts.server import NODE_CACHE_WATCH_FLAG
from render.node_reader import NODE_READER_ROLE
from render.scheduler_config import (
    SchedulerConfig,
    config_checksum,
    render_scheduler_config,
    scheduler_config_yaml,
)
from render.scheduler_rbac import SCHEDULER_ROLE, SCHEDULER_RULES
from tests.components.conftest import MIXED_GROUP, SINGLE_GROUP, run_with
from tests.components.mocks import StackRun
from tests.components.pod_specs import assert_restricted, containers, pod_template


def test_scheduler_rbac_is_its_own_role_and_its_own_lease(run: StackRun) -> None:
    """Not the built-in system:kube-scheduler (which may renew the default scheduler's Lease): the
    rendered rules, bound to the scheduler's ServiceAccount."""
    subject = [{"kind": "ServiceAccount", "name": SCHEDULER_NAME, "namespace": NAMESPACE}]
    cluster_bindings = [
        r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
        if r.plain["metadata"]["name"] != NODE_READER_ROLE  # the extender's (extender-cached)
    ]
    assert [b["roleRef"]["name"] for b in cluster_bindings] == [SCHEDULER_ROLE]
    assert all(b["subjects"] == subject for b in cluster_bindings)
    [cluster_role] = [
        r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r.plain["metadata"]["name"] == SCHEDULER_ROLE
    ]
    assert cluster_role["rules"] == list(SCHEDULER_RULES)
    assert not any(
        "leases" in rule["resources"] or "secrets" in rule["resources"] or "*" in rule["verbs"]
        for rule in cluster_role["rules"]
    )
    bindings = {
        r.plain["metadata"]["namespace"]: r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    }
    assert bindings["kube-system"]["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    [role] = [r.plain for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")]
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [SCHEDULER_NAME],
            "verbs": ["get", "update"],
        },
    ]
    assert bindings[NAMESPACE]["roleRef"]["name"] == role["metadata"]["name"]
    assert all(b["subjects"] == subject for b in bindings.values())
    lease = render_scheduler_config(SchedulerConfig(mode="extender"))["leaderElection"]
    assert (lease["resourceName"], lease["resourceNamespace"]) == (SCHEDULER_NAME, NAMESPACE)


def test_scheduler_config_map_holds_the_rendered_configuration(run: StackRun) -> None:
    mode = run.outputs["schedulerMode"]
    expected = scheduler_config_yaml(SchedulerConfig(mode=mode))
    assert run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"] == {CONFIG_FILE: expected}
    assert run.outputs["schedulerConfig"] == expected
    document = yaml.safe_load(expected)
    assert document["profiles"][0]["schedulerName"] == SCHEDULER_NAME
    if uses_extender(mode):
        [extender] = document["extenders"]
        assert (extender["nodeCacheCapable"], extender["ignorable"], extender["httpTimeout"]) == (
            mode == "extender-cached",
            False,
            "2s",
        )
        assert extender["enableHTTPS"] is True
    else:
        assert "extenders" not in document
        assert document["profiles"][0]["plugins"]["score"]["enabled"] == [
            {"name": "GPUScheduler", "weight": 10},
            {"name": "CapacityType", "weight": 20},
        ]
        for point in ("preFilter", "filter"):
            assert document["profiles"][0]["plugins"][point]["enabled"] == [
                {"name": "GPUScheduler"},
                {"name": "CapacityType"},
            ]
        assert document["profiles"][0]["plugins"]["multiPoint"]["enabled"] == [
            {"name": "GPUScheduler", "weight": 10},
            {"name": "CapacityType", "weight": 20},
            {"name": "JobZone"},
        ]


def test_scheduler_deployment(run: StackRun) -> None:
    mode = run.outputs["schedulerMode"]
    deployment = run.kubernetes_object("Deployment", SCHEDULER_NAME)
    template = deployment["spec"]["template"]
    pod = template["spec"]
    assert_restricted(pod)
    assert pod["serviceAccountName"] == SCHEDULER_NAME
    assert deployment["spec"]["replicas"] == 2
    [spread] = pod["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert spread["labelSelector"] == deployment["spec"]["selector"]
    assert pod["nodeSelector"]["training.example.com/node-pool"] == "system"
    [container] = pod["containers"]
    config_flag = f"--config={CONFIG_DIR}/{CONFIG_FILE}"
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": 10259, "scheme": "HTTPS"}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts[CONFIG_DIR]]["configMap"]["name"] == f"{SCHEDULER_NAME}-config"
    if uses_extender(mode):
        # extender-cached: a pod refused on a label the extender's watch has not yet updated is
        # retried within the bound, not after kube-scheduler's default 5 minutes.
        retry = ["--pod-max-in-unschedulable-pods-duration=30s"] if mode == "extender-cached" else []
        assert container["command"] == ["kube-scheduler", config_flag, *retry]
        assert container["image"] == "registry.k8s.io/kube-scheduler:v1.35.8"
        client = volumes[mounts["/etc/extender-client"]]["secret"]
        assert client == {"secretName": CLIENT_SECRET, "defaultMode": 0o440}
        assert "checksum/extender-client-tls" in template["metadata"]["annotations"]
    else:
        assert "command" not in container
        assert container["args"] == [config_flag]
        assert "/etc/extender-client" not in mounts
    checksum = template["metadata"]["annotations"][CONFIG_CHECKSUM_ANNOTATION]
    assert checksum == config_checksum(scheduler_config_yaml(SchedulerConfig(mode=mode)))


def test_a_configuration_change_changes_the_pod_template(
    extender_run: StackRun, plugin_run: StackRun
) -> None:
    def annotations(run: StackRun) -> dict[str, str]:
        result: dict[str, str] = run.kubernetes_object("Deployment", SCHEDULER_NAME)["spec"]["template"][
            "metadata"
        ]["annotations"]
        return result

    assert (
        annotations(extender_run)[CONFIG_CHECKSUM_ANNOTATION]
        != annotations(plugin_run)[CONFIG_CHECKSUM_ANNOTATION]
    )
    again = run_with({"schedulerMode": "extender", "gpuNodeGroups": [MIXED_GROUP, SINGLE_GROUP]})
    assert (
        annotations(again)[CONFIG_CHECKSUM_ANNOTATION]
        == annotations(extender_run)[CONFIG_CHECKSUM_ANNOTATION]
    ), "same configuration, same checksum: no rollout"


def test_switching_between_the_extender_modes_rolls_both_deployments(
    extender_run: StackRun, extender_cached_run: StackRun
) -> None:
    """extender <-> extender-cached: the scheduler's configuration checksum changes
    (nodeCacheCapable), and so does the extender's pod template (flag, token); nothing else
    of the extender's pod template does."""
    scheduler, cached_scheduler = (
        pod_template(r, SCHEDULER_NAME) for r in (extender_run, extender_cached_run)
    )
    assert (
        scheduler["metadata"]["annotations"][CONFIG_CHECKSUM_ANNOTATION]
        != cached_scheduler["metadata"]["annotations"][CONFIG_CHECKSUM_ANNOTATION]
    )
    stateless, cached = (pod_template(r, EXTENDER_SERVICE) for r in (extender_run, extender_cached_run))
    assert stateless != cached
    assert (
        stateless["spec"]["automountServiceAccountToken"],
        cached["spec"]["automountServiceAccountToken"],
    ) == (
        False,
        True,
    )
    assert cached["spec"]["containers"][0]["args"] == [
        *stateless["spec"]["containers"][0]["args"],
        NODE_CACHE_WATCH_FLAG,
    ]
    for template in (stateless, cached):
        template["spec"].pop("automountServiceAccountToken")
        template["spec"]["containers"][0].pop("args")
    assert stateless == cached, "only the token and the flag differ"


def test_new_client_certificates_change_the_pod_template(extender_run: StackRun) -> None:
    """The scheduler reads its client certificate at start: a rotation must roll its pods."""
    client = extender_run.kubernetes_object("Secret", CLIENT_SECRET)["stringData"]
    template = extender_run.kubernetes_object("Deployment", SCHEDULER_NAME)["spec"]["template"]
    annotation = template["metadata"]["annotations"][CLIENT_TLS_CHECKSUM_ANNOTATION]
    assert annotation == certificate_checksum(client["ca.crt"], client["tls.crt"])
    assert client["tls.key"] not in annotation
    # Every run of the mocks makes new certificates, as a rotation does.
    again = run_with({"schedulerMode": "extender", "gpuNodeGroups": [SINGLE_GROUP]})
    rotated = again.kubernetes_object("Deployment", SCHEDULER_NAME)["spec"]["template"]["metadata"][
        "annotations"
    ]
    assert rotated[CLIENT_TLS_CHECKSUM_ANNOTATION] != annotation


def test_scheduler_settings_reach_the_deployment() -> None:
    run = run_with(
        {
            "schedulerMode": "extender",
            "kubernetesVersion": "1.34",
            "clusterAutoscaler": {"imageTag": "v1.34.2"},
            "scheduler": {
                "replicas": 1,
                "kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.34.3",
                "resources": {"requests": {"cpu": "250m", "memory": "300Mi"}, "limits": {"memory": "900Mi"}},
            },
        }
    )
    deployment = run.kubernetes_object("Deployment", SCHEDULER_NAME)
    [container] = containers(deployment)
    assert deployment["spec"]["replicas"] == 1
    assert container["image"] == "registry.k8s.io/kube-scheduler:v1.34.3"
    assert container["resources"] == {
        "requests": {"cpu": "250m", "memory": "300Mi"},
        "limits": {"memory": "900Mi"},
    }
    assert run.one("eks:index:Cluster").plain["version"] == "1.34"


def test_http_timeout_and_percentage_of_nodes_to_score_reach_the_configuration() -> None:
    """Extender mode at thousands of nodes with percentageOfNodesToScore 100 needs a longer
    httpTimeout (bench/FINDINGS.md, section 7): both are stack settings, rendered into the ConfigMap."""
    run = run_with(
        {
            "schedulerMode": "extender",
            "scheduler": {"extenderHttpTimeoutSeconds": 5, "percentageOfNodesToScore": 100},
        }
    )
    document = yaml.safe_load(
        run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"][CONFIG_FILE]
    )
    [extender] = document["extenders"]
    assert extender["httpTimeout"] == "5s"
    assert document["profiles"][0]["percentageOfNodesToScore"] == 100
    assert "percentageOfNodesToScore" not in document  # the profile's, not the global default


def test_percentage_of_nodes_to_score_is_left_to_kube_scheduler_unless_set(run: StackRun) -> None:
    document = yaml.safe_load(run.outputs["schedulerConfig"])
    assert "percentageOfNodesToScore" not in document["profiles"][0]
    assert "percentageOfNodesToScore" not in document


def test_plugin_mode_takes_percentage_of_nodes_to_score_too() -> None:
    run = run_with({"schedulerMode": "plugin", "scheduler": {"percentageOfNodesToScore": 30}})
    document = yaml.safe_load(run.outputs["schedulerConfig"])
    assert document["profiles"][0]["percentageOfNodesToScore"] == 30
    assert "extenders" not in document
