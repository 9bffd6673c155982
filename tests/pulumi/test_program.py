"""The whole Pulumi program under mocks, in every scheduler mode.

Each test reads what the program declared (inputs as the engine received them) and checks
one property: the resource graph, the cluster and node groups, labels derived from moto's
EC2 catalogue, the device plugin, images, certificates, the extender, the scheduler.
"""

import base64
import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from moto import mock_aws

from components.certificates import (
    CLIENT_SECRET,
    SERVER_DNS_NAMES,
    SERVER_SECRET,
    Certificates,
    certificate_checksum,
)
from components.container_image import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE, PROJECT_ROOT
from components.content_tag import content_tag
from components.custom_scheduler import (
    CLIENT_TLS_CHECKSUM_ANNOTATION,
    CONFIG_CHECKSUM_ANNOTATION,
    CONFIG_DIR,
    CONFIG_FILE,
)
from components.extender import NODE_READER_ROLE, extender_args
from components.render.scheduler_config import (
    EXTENDER_PORT,
    EXTENDER_SERVICE_HOST,
    SchedulerConfig,
    config_checksum,
    render_scheduler_config,
    scheduler_config_yaml,
    uses_extender,
)
from components.render.webhook_config import WEBHOOK_TLS_SECRET
from components.stack import build_stack
from components.stack_config import (
    EXTENDER_RESOURCES,
    PROJECT,
    CertificateSettings,
    ExtenderSettings,
    StackConfigError,
    SystemNodeGroup,
)
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, SCHEDULER_NAME, WEBHOOK_SERVICE
from contracts.server import HEALTH_PORT, NODE_CACHE_WATCH_FLAG
from extender_app.cli import build_parser, settings_from
from policy import CAPACITY_TYPE_LABEL, NODE_MEMORY_LABEL
from tests.pulumi.conftest import MIXED_GROUP, SINGLE_GROUP, run_with, stack_config
from tests.pulumi.mocks import REGION, StackRun, is_secret, reveal, run_stack, strings_outside_secrets

REPO_ROOT = Path(__file__).resolve().parents[2]
COMPONENT = "gpu-scheduler-eks:index:"
K8S = "kubernetes:"


def moto_per_gpu_memory(instance_types: list[str]) -> int:
    """The smallest per-GPU memory among the types, read from moto's EC2 through boto3."""
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        described = ec2.describe_instance_types(InstanceTypes=instance_types)["InstanceTypes"]
    return min(gpu["MemoryInfo"]["SizeInMiB"] for item in described for gpu in item["GpuInfo"]["Gpus"])


def moto_registry_credentials() -> tuple[str, str]:
    """(user, password) of moto's ECR authorization token, decoded as ECR clients do."""
    with mock_aws():
        ecr = boto3.client("ecr", region_name=REGION)
        token = ecr.get_authorization_token()["authorizationData"][0]["authorizationToken"]
    user, password = base64.b64decode(token).decode().split(":", 1)
    return user, password


def containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    return result


def pod_template(run: StackRun, name: str) -> dict[str, Any]:
    template: dict[str, Any] = run.kubernetes_object("Deployment", name)["spec"]["template"]
    return template


# --- the resource graph --------------------------------------------------------------------

WITH_EXTENDER = {
    "Network": 1,
    "Cluster": 1,
    "GpuNodeGroup": 2,
    "ClusterAutoscaler": 1,
    "DevicePlugin": 1,
    "ContainerImage": 2,
    "Certificates": 1,
    "Extender": 1,
    "AdmissionWebhook": 1,
    "CustomScheduler": 1,
}
EXPECTED_COMPONENTS = {
    "extender": WITH_EXTENDER,
    "extender-cached": WITH_EXTENDER,
    "plugin": {
        "Network": 1,
        "Cluster": 1,
        "GpuNodeGroup": 2,
        "ClusterAutoscaler": 1,
        "DevicePlugin": 1,
        "ContainerImage": 2,
        "Certificates": 1,
        "AdmissionWebhook": 1,
        "CustomScheduler": 1,
    },
}


def test_components_per_mode(run: StackRun) -> None:
    mode = run.outputs["schedulerMode"]
    counts: dict[str, int] = {}
    for resource in run.resources:
        if resource.type.startswith(COMPONENT):
            short = resource.type.removeprefix(COMPONENT)
            counts[short] = counts.get(short, 0) + 1
    assert counts == EXPECTED_COMPONENTS[mode]


def test_every_resource_but_the_namespace_belongs_to_a_component(run: StackRun) -> None:
    top_level = {r.type for r in run.resources if r.parents == ("pulumi:pulumi:Stack",)}
    assert top_level == {
        f"{COMPONENT}{name}" for name in EXPECTED_COMPONENTS[run.outputs["schedulerMode"]]
    } | {"kubernetes:core/v1:Namespace"}
    for resource in run.resources:
        if resource.custom and resource.type != "kubernetes:core/v1:Namespace":
            assert resource.parents[-1].startswith(COMPONENT), f"{resource.type} {resource.name}"


def test_plugin_mode_has_no_extender_certificates_or_upstream_image(plugin_run: StackRun) -> None:
    """Plugin mode: no extender objects; the webhook's (the CA, its certificate, its Secret, its
    workload) are there, as in every mode."""
    requests = [r.name for r in plugin_run.of_type("tls:index/certRequest:CertRequest")]
    assert requests == ["extender-tls-webhook-request"]
    assert [r.plain["metadata"]["name"] for r in plugin_run.of_type("kubernetes:core/v1:Secret")] == [
        WEBHOOK_TLS_SECRET
    ]
    for kind in ("networking.k8s.io/v1:NetworkPolicy", "core/v1:Service", "policy/v1:PodDisruptionBudget"):
        assert [r.plain["metadata"]["name"] for r in plugin_run.of_type(f"kubernetes:{kind}")] == [
            WEBHOOK_SERVICE
        ]
    assert not plugin_run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    accounts = [r.plain["metadata"]["name"] for r in plugin_run.of_type("kubernetes:core/v1:ServiceAccount")]
    assert sorted(accounts) == sorted([SCHEDULER_NAME, WEBHOOK_SERVICE])
    deployments = [d.plain["metadata"]["name"] for d in plugin_run.of_type("kubernetes:apps/v1:Deployment")]
    assert sorted(deployments) == sorted([SCHEDULER_NAME, WEBHOOK_SERVICE])
    images = {i.plain["dockerfile"]["location"] for i in plugin_run.of_type("docker-build:index:Image")}
    assert images == {GPU_SCHEDULER_IMAGE.dockerfile, EXTENDER_IMAGE.dockerfile}
    assert "registry.k8s.io" not in json.dumps(plugin_run.kubernetes_object("Deployment", SCHEDULER_NAME))


def test_plugin_mode_without_the_webhook_builds_and_runs_nothing_of_the_extender_image() -> None:
    run = run_with({"schedulerMode": "plugin", "webhook": {"enabled": False}})
    assert not [r for r in run.resources if r.type.startswith("tls:")]
    assert not run.of_type("kubernetes:core/v1:Secret")
    assert not run.of_type("kubernetes:core/v1:Service")
    assert not run.of_type("kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration")
    [image] = run.of_type("docker-build:index:Image")
    assert image.plain["dockerfile"]["location"] == GPU_SCHEDULER_IMAGE.dockerfile


def test_extender_modes_build_only_the_extender_image(any_extender_run: StackRun) -> None:
    [image] = any_extender_run.of_type("docker-build:index:Image")
    assert image.plain["dockerfile"]["location"] == EXTENDER_IMAGE.dockerfile


def test_both_repositories_exist_in_both_modes(run: StackRun) -> None:
    names = sorted(r.plain["name"] for r in run.of_type("aws:ecr/repository:Repository"))
    assert names == sorted(
        f"gpu-scheduler-{'test'}/{image.repository}" for image in (EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE)
    )


# --- cluster, network, node groups ------------------------------------------------------------


def test_cluster_has_no_fargate_no_default_node_group_and_enforces_network_policy(run: StackRun) -> None:
    cluster = run.one("eks:index:Cluster").plain
    assert cluster["fargate"] is False
    assert cluster["skipDefaultNodeGroup"] is True
    assert cluster["version"] == "1.35"
    assert cluster["name"] == "gpu-scheduler-test"
    assert cluster["authenticationMode"] == "API"
    assert cluster["vpcCniOptions"]["enableNetworkPolicy"] is True
    vpc = run.one("awsx:ec2:Vpc").plain
    assert vpc["numberOfAvailabilityZones"] >= 2
    assert {spec["type"] for spec in vpc["subnetSpecs"]} == {"Public", "Private"}
    for group in run.of_type("aws:eks/nodeGroup:NodeGroup"):
        assert group.plain["subnetIds"] == cluster["privateSubnetIds"]
        assert group.plain["clusterName"] == cluster["name"]


def test_creation_order(run: StackRun) -> None:
    """What must exist first: nodes need the cluster and the role's policies; CoreDNS and our
    workloads need the system nodes (pulumi-kubernetes waits for a Deployment to be ready)."""
    attachments = {
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", r.name)
        for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    for group in run.of_type("aws:eks/nodeGroup:NodeGroup"):
        assert ("eks:index:Cluster", "cluster-eks") in group.depends_on
        assert attachments <= group.depends_on
    system = ("aws:eks/nodeGroup:NodeGroup", "cluster-system")
    coredns = run.one("aws:eks/addon:Addon", "cluster-coredns")
    assert coredns.plain["addonName"] == "coredns"
    assert system in coredns.depends_on
    namespace = ("kubernetes:core/v1:Namespace", NAMESPACE)
    for deployment in run.of_type("kubernetes:apps/v1:Deployment"):
        assert {system, namespace} <= deployment.depends_on
    for secret in run.of_type("kubernetes:core/v1:Secret"):
        assert namespace in secret.depends_on


def test_an_existing_network_creates_no_vpc() -> None:
    subnets = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
    run = run_with({"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": subnets}})
    assert not run.of_type("awsx:ec2:Vpc")
    cluster = run.one("eks:index:Cluster").plain
    assert cluster["privateSubnetIds"] == subnets
    assert cluster["vpcId"] == "vpc-0123456789abcdef0"
    assert "publicSubnetIds" not in cluster, "no public subnets given: none passed on"
    assert run.one("aws:eks/nodeGroup:NodeGroup", "cluster-system").plain["subnetIds"] == subnets


def test_node_role_has_the_managed_node_policies(run: StackRun) -> None:
    role = run.one("aws:iam/role:Role", "cluster-node-role").plain
    assert json.loads(role["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }
    policies = {
        r.plain["policyArn"].rsplit("/", 1)[1]
        for r in run.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert policies == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
    }


def test_system_node_group(run: StackRun) -> None:
    system = run.one("aws:eks/nodeGroup:NodeGroup", "cluster-system").plain
    assert system["amiType"] == "AL2023_x86_64_STANDARD"
    assert system["capacityType"] == "ON_DEMAND"
    assert "taints" not in system or not system["taints"]
    assert NODE_MEMORY_LABEL not in system["labels"]
    assert system["labels"][CAPACITY_TYPE_LABEL] == "on-demand"


@pytest.mark.parametrize("group", [MIXED_GROUP, SINGLE_GROUP], ids=lambda group: group["name"])
def test_gpu_node_group_label_comes_from_ec2(run: StackRun, group: dict[str, Any]) -> None:
    declared = run.one("aws:eks/nodeGroup:NodeGroup", f"gpu-{group['name']}-nodes").plain
    expected = moto_per_gpu_memory(group["instanceTypes"])
    assert declared["labels"][NODE_MEMORY_LABEL] == str(expected)
    assert declared["labels"]["nvidia.com/gpu.present"] == "true"
    assert declared["labels"][CAPACITY_TYPE_LABEL] == group.get("capacityType", "on-demand")
    assert declared["amiType"] == "AL2023_x86_64_NVIDIA"
    assert declared["instanceTypes"] == group["instanceTypes"]
    assert run.outputs["gpuMemoryLabels"][group["name"]] == str(expected)
    assert all(
        call.args["instanceType"]
        in {t for g in (MIXED_GROUP, SINGLE_GROUP) for t in g["instanceTypes"]}
        | set(SystemNodeGroup().instance_types)
        for call in run.calls
        if call.token.endswith("getInstanceType")
    )


def test_mixed_group_gets_the_minimum_of_its_types(extender_run: StackRun) -> None:
    per_type = {name: moto_per_gpu_memory([name]) for name in MIXED_GROUP["instanceTypes"]}
    assert len(set(per_type.values())) == 2
    label = extender_run.outputs["gpuMemoryLabels"][MIXED_GROUP["name"]]
    assert label == str(min(per_type.values()))


def test_gpu_groups_are_tainted_with_their_capacity_type(run: StackRun) -> None:
    mixed = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-mixed-nodes").plain
    single = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain
    assert mixed["capacityType"] == "SPOT"
    assert single["capacityType"] == "ON_DEMAND"
    assert single["scalingConfig"] == {"minSize": 1, "desiredSize": 1, "maxSize": 4}
    for group in (mixed, single):
        assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]


def test_the_taint_can_be_turned_off() -> None:
    run = run_with({"gpuTaint": "false", "gpuNodeGroups": [SINGLE_GROUP]})
    group = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain
    assert not group.get("taints")


def test_a_type_without_gpu_fails_naming_the_key() -> None:
    groups = [SINGLE_GROUP, {"name": "cpu", "instanceTypes": ["g5.xlarge", "m5.large"]}]
    # Pulumi re-raises the error of a failed input as a ValueError that carries its message.
    with pytest.raises(
        ValueError, match=rf"{PROJECT}:gpuNodeGroups\[1\]\.instanceTypes .*m5\.large has no GPU"
    ):
        run_with({"gpuNodeGroups": groups})


def test_an_arm_gpu_type_fails_naming_the_key() -> None:
    with pytest.raises(ValueError, match=rf"{PROJECT}:gpuNodeGroups\[0\]\.instanceTypes .*g5g\.xlarge"):
        run_with({"gpuNodeGroups": [{"name": "arm", "instanceTypes": ["g5g.xlarge"]}]})


def test_an_unknown_instance_type_fails_in_the_lookup() -> None:
    with pytest.raises(Exception, match=r"g9z\.xlarge"):
        run_with({"gpuNodeGroups": [{"name": "future", "instanceTypes": ["g9z.xlarge"]}]})


def test_device_plugin_is_pinned_and_runs_only_on_tainted_gpu_nodes(run: StackRun) -> None:
    release = run.one("kubernetes:helm.sh/v3:Release", "nvidia-device-plugin-release").plain
    assert release["chart"] == "nvidia-device-plugin"
    assert release["repositoryOpts"]["repo"] == "https://nvidia.github.io/k8s-device-plugin"
    assert release["version"] == "0.17.4"
    assert release["namespace"] == "kube-system"
    gpu_group = run.one("aws:eks/nodeGroup:NodeGroup", "gpu-l40s-nodes").plain
    [taint] = gpu_group["taints"]
    assert release["values"]["nodeSelector"] == {
        "nvidia.com/gpu.present": gpu_group["labels"]["nvidia.com/gpu.present"]
    }
    [toleration] = release["values"]["tolerations"]
    assert toleration == {"key": taint["key"], "operator": "Exists", "effect": "NoSchedule"}


# --- images ----------------------------------------------------------------------------------


def test_repositories_are_mutable_scanned_and_pruned(run: StackRun) -> None:
    """MUTABLE: a rerun may push a tag again (below); what runs is pinned by digest."""
    for repository in run.of_type("aws:ecr/repository:Repository"):
        assert repository.plain["imageTagMutability"] == "MUTABLE"
        assert repository.plain["imageScanningConfiguration"] == {"scanOnPush": True}
        assert repository.plain["forceDelete"] is False
    policies = [json.loads(r.plain["policy"]) for r in run.of_type("aws:ecr/lifecyclePolicy:LifecyclePolicy")]
    assert len(policies) == 2
    for policy in policies:
        [rule] = policy["rules"]
        assert rule["selection"]["countType"] == "imageCountMoreThan"
        assert rule["selection"]["countNumber"] == 10
        assert rule["action"] == {"type": "expire"}


def test_image_settings_reach_the_repositories() -> None:
    run = run_with({"images": {"keepImages": 3, "forceDelete": True}})
    assert all(r.plain["forceDelete"] is True for r in run.of_type("aws:ecr/repository:Repository"))
    for policy in run.of_type("aws:ecr/lifecyclePolicy:LifecyclePolicy"):
        assert json.loads(policy.plain["policy"])["rules"][0]["selection"]["countNumber"] == 3


def test_image_is_built_from_its_sources_and_pushed_with_ecr_credentials(run: StackRun) -> None:
    source = EXTENDER_IMAGE if uses_extender(run.outputs["schedulerMode"]) else GPU_SCHEDULER_IMAGE
    [image] = [
        i
        for i in run.of_type("docker-build:index:Image")
        if i.plain["dockerfile"]["location"] == source.dockerfile
    ]
    plain = image.plain
    assert plain["push"] is True
    assert plain["buildOnPreview"] is False
    assert plain["platforms"] == ["linux/amd64"]
    assert plain["context"]["location"] == source.context
    [tag] = plain["tags"]
    repository, _, version = tag.rpartition(":")
    assert version == content_tag(
        PROJECT_ROOT, source.sources, build_inputs=(source.dockerfile, "linux/amd64")
    )
    assert repository.endswith(f"/gpu-scheduler-test/{source.repository}")
    [registry] = plain["registries"]
    assert registry["address"] == repository
    assert (registry["username"], registry["password"]) == moto_registry_credentials()
    assert is_secret(image.inputs["registries"]), "the registry password must be a secret"


def test_deployments_run_the_pushed_digest(run: StackRun) -> None:
    if uses_extender(run.outputs["schedulerMode"]):
        deployment, output = run.kubernetes_object("Deployment", EXTENDER_SERVICE), "extenderImage"
    else:
        deployment, output = run.kubernetes_object("Deployment", SCHEDULER_NAME), "schedulerImage"
    [container] = containers(deployment)
    assert "@sha256:" in container["image"]
    assert container["image"] == run.outputs[output]


def test_a_rerun_after_an_interrupted_push_can_push_its_tag_again() -> None:
    """``pulumi up`` interrupted after the push, before the state was saved: the next ``up``
    rebuilds, and a rebuild is another manifest under the same content tag. The repositories the
    program creates (in moto's ECR, with the program's settings) must take it; an IMMUTABLE one
    refuses (ECR: ImageTagAlreadyExistsException; moto: ImageAlreadyExistsException)."""
    config = stack_config({"schedulerMode": "extender"})
    with mock_aws():
        run = run_stack(lambda: build_stack(config))
        ecr = boto3.client("ecr", region_name=REGION)
        [image] = run.of_type("docker-build:index:Image")
        repository_url, _, tag = image.plain["tags"][0].rpartition(":")
        name = repository_url.split("/", 1)[1]
        digests = set()
        for build in ("first build, pushed", "rebuild after the interruption"):
            manifest = json.dumps(
                {
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"note": build},
                }
            )
            pushed = ecr.put_image(repositoryName=name, imageManifest=manifest, imageTag=tag)
            digests.add(pushed["image"]["imageId"]["imageDigest"])
        [described] = ecr.describe_images(repositoryName=name, imageIds=[{"imageTag": tag}])["imageDetails"]
    assert len(digests) == 2
    assert described["imageDigest"] in digests


# --- certificates and secrets ------------------------------------------------------------------


def test_certificates(extender_run: StackRun) -> None:
    keys = extender_run.of_type("tls:index/privateKey:PrivateKey")
    assert len(keys) == 4  # CA, extender server, scheduler client, webhook server
    assert all((k.plain["algorithm"], k.plain["ecdsaCurve"]) == ("ECDSA", "P256") for k in keys)
    ca = extender_run.one("tls:index/selfSignedCert:SelfSignedCert").plain
    assert ca["isCaCertificate"] is True
    assert {"cert_signing", "crl_signing"} <= set(ca["allowedUses"])
    server_request = extender_run.one(
        "tls:index/certRequest:CertRequest", "extender-tls-server-request"
    ).plain
    assert server_request["dnsNames"] == list(SERVER_DNS_NAMES)
    assert f"{EXTENDER_SERVICE}.{NAMESPACE}.svc" in server_request["dnsNames"]
    assert f"{EXTENDER_SERVICE}.{NAMESPACE}.svc.cluster.local" in server_request["dnsNames"]
    client_request = extender_run.one(
        "tls:index/certRequest:CertRequest", "extender-tls-client-request"
    ).plain
    assert client_request["subject"]["commonName"] == SCHEDULER_NAME
    assert "dnsNames" not in client_request
    server = extender_run.one("tls:index/locallySignedCert:LocallySignedCert", "extender-tls-server").plain
    client = extender_run.one("tls:index/locallySignedCert:LocallySignedCert", "extender-tls-client").plain
    assert "server_auth" in server["allowedUses"]
    assert "client_auth" not in server["allowedUses"]
    assert "client_auth" in client["allowedUses"]
    assert "server_auth" not in client["allowedUses"]
    defaults = CertificateSettings()
    for leaf in (server, client):
        assert (leaf["validityPeriodHours"], leaf["earlyRenewalHours"]) == (
            defaults.validity_hours,
            defaults.early_renewal_hours,
        )
    assert ca["validityPeriodHours"] == defaults.ca_validity_hours > defaults.validity_hours
    for leaf in (server, client):
        assert leaf["caCertPem"] == extender_run.outputs["caCertPem"]


def test_the_server_certificate_names_the_host_the_scheduler_dials(extender_run: StackRun) -> None:
    config = yaml.safe_load(
        extender_run.kubernetes_object("ConfigMap", f"{SCHEDULER_NAME}-config")["data"][CONFIG_FILE]
    )
    host = config["extenders"][0]["urlPrefix"].removeprefix("https://").rsplit(":", 1)[0]
    assert host == EXTENDER_SERVICE_HOST
    assert (
        host
        in extender_run.one("tls:index/certRequest:CertRequest", "extender-tls-server-request").plain[
            "dnsNames"
        ]
    )


def test_extender_endpoint_constants_render_the_documented_configuration() -> None:
    """The names components share (EXTENDER_SERVICE_HOST, EXTENDER_PORT, EXTENDER_CLIENT_DIR)
    still render the mission's extender entry."""
    [endpoint] = render_scheduler_config(SchedulerConfig(mode="extender"))["extenders"]
    assert endpoint["urlPrefix"] == "https://scheduler-extender.scheduler-lab.svc:8443"
    assert endpoint["tlsConfig"] == {
        "caFile": "/etc/extender-client/ca.crt",
        "certFile": "/etc/extender-client/tls.crt",
        "keyFile": "/etc/extender-client/tls.key",
    }


def test_certificate_settings_reach_every_certificate() -> None:
    run = run_with(
        {"certificates": {"validityHours": 2000, "caValidityHours": 9000, "earlyRenewalHours": 100}}
    )
    ca = run.one("tls:index/selfSignedCert:SelfSignedCert").plain
    leaves = [r.plain for r in run.of_type("tls:index/locallySignedCert:LocallySignedCert")]
    assert len(leaves) == 3
    assert all((c["validityPeriodHours"], c["earlyRenewalHours"]) == (2000, 100) for c in leaves)
    assert (ca["validityPeriodHours"], ca["earlyRenewalHours"]) == (9000, 100)


def test_private_keys_and_registry_password_only_ever_travel_as_secrets(extender_run: StackRun) -> None:
    """No resource input anywhere holds a key or the registry password outside a secret."""
    key_names = {r.name for r in extender_run.of_type("tls:index/privateKey:PrivateKey")}
    _, password = moto_registry_credentials()
    seen_inside_secrets = 0
    for resource in extender_run.resources:
        for text in strings_outside_secrets(resource.inputs):
            assert "PRIVATE KEY-----" not in text, f"{resource.type} {resource.name} has a plain key"
            assert password not in text, f"{resource.type} {resource.name} has a plain registry password"
        seen_inside_secrets += json.dumps(resource.plain).count("BEGIN EC PRIVATE KEY")
    # CA key: CA cert + 3 leaf certs; leaf keys (extender, scheduler, webhook): their CSR + their Secret.
    assert seen_inside_secrets == 4 + 3 * 2
    assert len(key_names) == 4


def test_certificates_expose_private_keys_only_as_secrets() -> None:
    """Our own wrapping: the SDKs mark secret inputs, but an output we pass on is ours to mark."""

    def program() -> dict[str, Any]:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        namespace = k8s.core.v1.Namespace(
            "namespace", metadata={"name": NAMESPACE}, opts=pulumi.ResourceOptions(provider=provider)
        )
        certificates = Certificates("tls", CertificateSettings(), provider, namespace)
        return {
            "serverKey": certificates.server_key_pem,
            "clientKey": certificates.client_key_pem,
            "serverCert": certificates.server_cert_pem,
            "caCert": certificates.ca_cert_pem,
        }

    with mock_aws():
        run = run_stack(program)
    assert run.secret_outputs == {"serverKey", "clientKey"}


def test_tls_secrets(extender_run: StackRun) -> None:
    server = extender_run.kubernetes_object("Secret", SERVER_SECRET)
    client = extender_run.kubernetes_object("Secret", CLIENT_SECRET)
    assert server["metadata"]["namespace"] == client["metadata"]["namespace"] == NAMESPACE
    assert server["type"] == client["type"] == "kubernetes.io/tls"
    assert set(server["stringData"]) == {"tls.crt", "tls.key", "client-ca.crt"}
    assert set(client["stringData"]) == {"tls.crt", "tls.key", "ca.crt"}
    for secret in (server, client):
        cert = x509.load_pem_x509_certificate(secret["stringData"]["tls.crt"].encode())
        key = serialization.load_pem_private_key(secret["stringData"]["tls.key"].encode(), password=None)
        assert cert.public_key() == key.public_key(), "tls.key must be the key of tls.crt"
    assert (
        server["stringData"]["client-ca.crt"]
        == client["stringData"]["ca.crt"]
        == extender_run.outputs["caCertPem"]
    )
    for name in ("extender-tls-server-secret", "extender-tls-client-secret"):
        assert is_secret(extender_run.one("kubernetes:core/v1:Secret", name).inputs["stringData"])


def test_kubeconfig_is_a_secret_output_and_secret_provider_input(run: StackRun) -> None:
    assert "kubeconfig" in run.secret_outputs
    assert is_secret(run.one("pulumi:providers:kubernetes").inputs["kubeconfig"])


# --- namespace and extender ------------------------------------------------------------------


def test_namespace_enforces_restricted_pod_security(run: StackRun) -> None:
    labels = run.kubernetes_object("Namespace", NAMESPACE)["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
        assert labels[f"pod-security.kubernetes.io/{mode}-version"] == "v1.35"


def _assert_restricted(pod_spec: dict[str, Any]) -> None:
    security = pod_spec["securityContext"]
    assert security["runAsNonRoot"] is True
    assert (security["runAsUser"], security["runAsGroup"], security["fsGroup"]) == (65532, 65532, 65532)
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod_spec["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert "limits" in container["resources"]
        assert "memory" in container["resources"]["limits"]
        assert "cpu" in container["resources"]["requests"]


def test_extender_deployment(any_extender_run: StackRun) -> None:
    deployment = any_extender_run.kubernetes_object("Deployment", EXTENDER_SERVICE)
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert pod["serviceAccountName"] == EXTENDER_SERVICE
    _assert_restricted(pod)
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
    stateless = extender_args(ExtenderSettings(), "extender")
    assert not [arg for arg in stateless if arg.startswith("--node-cache")]
    if mode == "extender-cached":
        assert container["args"] == [*stateless, NODE_CACHE_WATCH_FLAG]
    else:
        assert container["args"] == stateless


def test_node_reader_rbac_exists_only_in_extender_cached_mode(run: StackRun) -> None:
    roles = [r.plain for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")]
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
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]
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
    run = run_with({"extender": {"replicas": 3, "maxBodyBytes": 33554432, "maxNodes": 2000}})
    deployment = run.kubernetes_object("Deployment", EXTENDER_SERVICE)
    [container] = containers(deployment)
    settings = settings_from(container["args"], {})
    assert (settings.max_body_bytes, settings.max_nodes) == (33554432, 2000)
    assert deployment["spec"]["replicas"] == 3


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


# --- the custom scheduler ----------------------------------------------------------------------


def test_scheduler_rbac_binds_the_built_in_roles_and_its_own_lease(run: StackRun) -> None:
    subject = [{"kind": "ServiceAccount", "name": SCHEDULER_NAME, "namespace": NAMESPACE}]
    cluster_bindings = [
        r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
        if r.plain["metadata"]["name"] != NODE_READER_ROLE  # the extender's (extender-cached)
    ]
    assert sorted(b["roleRef"]["name"] for b in cluster_bindings) == [
        "system:kube-scheduler",
        "system:volume-scheduler",
    ]
    assert all(b["subjects"] == subject for b in cluster_bindings)
    bindings = {
        r.plain["metadata"]["namespace"]: r.plain
        for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    }
    assert bindings["kube-system"]["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    [role] = [r.plain for r in run.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")]
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [SCHEDULER_NAME],
            "verbs": ["get", "update"],
        }
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
        ]


def test_scheduler_deployment(run: StackRun) -> None:
    mode = run.outputs["schedulerMode"]
    deployment = run.kubernetes_object("Deployment", SCHEDULER_NAME)
    template = deployment["spec"]["template"]
    pod = template["spec"]
    _assert_restricted(pod)
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


# --- __main__.py -------------------------------------------------------------------------------


@pytest.fixture
def stack_config_values() -> Iterator[Any]:
    yield pulumi.runtime.set_all_config
    pulumi.runtime.set_all_config({})


def _run_main() -> StackRun:
    def program() -> dict[str, Any]:
        root = pulumi.runtime.get_root_resource()
        root.outputs.clear()  # type: ignore[union-attr]
        runpy.run_path(str(REPO_ROOT / "__main__.py"), run_name="__main__")
        return dict(root.outputs)  # type: ignore[union-attr]

    with mock_aws():
        return run_stack(program)


def test_main_reads_the_config_once_and_exports_the_outputs(stack_config_values: Any) -> None:
    stack_config_values(
        {
            f"{PROJECT}:schedulerMode": "plugin",
            f"{PROJECT}:gpuNodeGroups": json.dumps([SINGLE_GROUP]),
            "aws:region": REGION,
        }
    )
    run = _run_main()
    assert run.outputs["schedulerMode"] == "plugin"
    assert set(run.outputs) >= {
        "kubeconfig",
        "clusterName",
        "gpuMemoryLabels",
        "schedulerImage",
        "schedulerConfig",
    }
    assert "kubeconfig" in run.secret_outputs
    assert run.outputs["gpuMemoryLabels"] == {"l40s": str(moto_per_gpu_memory(SINGLE_GROUP["instanceTypes"]))}


def test_main_fails_before_declaring_anything_on_a_bad_value(stack_config_values: Any) -> None:
    stack_config_values({f"{PROJECT}:extender": json.dumps({"replicas": 1})})
    with pytest.raises(StackConfigError, match=rf"^{PROJECT}:extender\.replicas: must be 2\.\.20"):
        _run_main()


def test_reveal_and_is_secret_agree_with_the_mocks_marker() -> None:
    wrapped = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": {"a": [1]}}
    assert is_secret(wrapped)
    assert reveal({"x": wrapped}) == {"x": {"a": [1]}}
    assert not is_secret({"value": 1})


def test_node_groups_follow_the_cluster_version_and_leave_the_desired_size_to_autoscalers(
    run: StackRun,
) -> None:
    """Without ``version`` a group keeps its first AMI release when kubernetesVersion moves on, and
    without ignoring ``desiredSize`` every ``pulumi up`` would undo what an autoscaler scaled."""
    cluster = run.one("eks:index:Cluster").plain
    groups = run.of_type("aws:eks/nodeGroup:NodeGroup")
    assert len(groups) >= 2
    for group in groups:
        assert group.plain["version"] == cluster["version"], group.name
        assert "scalingConfig.desiredSize" in group.ignore_changes, group.name


def test_node_groups_follow_another_kubernetes_version() -> None:
    run = run_with(
        {
            "kubernetesVersion": "1.34",
            "clusterAutoscaler": {"imageTag": "v1.34.2"},
            "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.34.3"},
        }
    )
    assert {group.plain["version"] for group in run.of_type("aws:eks/nodeGroup:NodeGroup")} == {"1.34"}


def test_a_system_type_the_ami_cannot_run_fails_naming_the_key() -> None:
    """The system group's AMI is x86_64: an arm64 type would fail only when EKS creates the group."""
    with pytest.raises(
        ValueError, match=rf"{PROJECT}:systemNodeGroup\.instanceTypes .*m6g\.large supports arm64, not x86_64"
    ):
        run_with({"systemNodeGroup": {"instanceTypes": ["m6i.large", "m6g.large"]}})
