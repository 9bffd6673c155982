"""Stack configuration: defaults, the example stacks, and an error naming the key for each bad value.

Pure tests (no mocks): ``parse_stack_config`` gets values exactly as Pulumi hands them to
a program, scalars as text and structured values as JSON.
"""

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from moto import mock_aws

from components.kubernetes_versions import (
    cluster_minor,
    go_mod_kubernetes_version,
    image_tag,
    plugin_kubernetes_version,
    release_tag_minor,
)
from components.stack_config import (
    DEFAULT_GPU_NODE_GROUPS,
    DEFAULT_KUBERNETES_VERSION,
    EKS_ONLY_KEYS,
    MAX_EXTENDER_WEIGHT,
    PROJECT,
    ExistingClusterSettings,
    ExistingNetwork,
    NewVpc,
    StackConfigError,
    parse_stack_config,
)
from components.stack_config.pulumi_config import load_stack_config
from tests.components.conftest import (
    CLIENT_KEY_DATA,
    EXAMPLE_STACKS,
    EXTENDER_REFERENCE,
    GPU_SCHEDULER_REFERENCE,
    example_stack_name,
    example_stack_values,
    existing_values,
    kubeconfig_text,
    stack_config,
)
from tests.components.mocks import StackMocks

REPO_ROOT = Path(__file__).resolve().parents[3]
GROUP = {"name": "a", "instanceTypes": ["g5.xlarge"]}


def test_defaults_make_a_working_stack() -> None:
    config = parse_stack_config({}, stack="dev", plugin_version=plugin_kubernetes_version())
    assert config.cluster_name == "gpu-scheduler-dev"
    assert config.kubernetes_version == DEFAULT_KUBERNETES_VERSION
    assert config.scheduler_mode == "plugin"
    assert config.gpu_taint is True
    assert config.gpu_node_groups == DEFAULT_GPU_NODE_GROUPS
    assert isinstance(config.network, NewVpc)
    assert config.network.availability_zones >= 2
    assert config.extender.replicas == 2


def test_default_kubernetes_version_matches_the_plugin_build_and_the_scheduler_image() -> None:
    config = stack_config({})
    assert release_tag_minor(plugin_kubernetes_version()) == cluster_minor(DEFAULT_KUBERNETES_VERSION)
    assert release_tag_minor(image_tag(config.scheduler.kube_scheduler_image)) == cluster_minor(
        DEFAULT_KUBERNETES_VERSION
    )


def test_pulumi_yaml_runs_this_project_in_the_project_venv() -> None:
    project = yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == PROJECT
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
    assert (REPO_ROOT / "__main__.py").is_file()


def test_there_are_example_stacks() -> None:
    assert {path.name for path in EXAMPLE_STACKS} >= {"Pulumi.dev.yaml", "Pulumi.prod.yaml"}


@pytest.mark.parametrize("stack_file", EXAMPLE_STACKS, ids=lambda path: path.name)
def test_example_stacks_are_valid(stack_file: Path) -> None:
    """An existing-cluster example can only hold the kubeconfig's place (a secret is encrypted
    per stack); the test sets it as ``pulumi config set --secret --path`` would."""
    keys = yaml.safe_load(stack_file.read_text())["config"]
    existing = keys.get(f"{PROJECT}:existingCluster", {})
    assert "kubeconfig" not in existing, "a kubeconfig never belongs in an example stack file"
    values, secret_keys = example_stack_values(stack_file)
    config = parse_stack_config(
        values,
        stack=example_stack_name(stack_file),
        plugin_version=plugin_kubernetes_version(),
        secret_keys=secret_keys,
    )
    if config.existing_cluster is None:
        assert config.gpu_node_groups
        assert "aws:region" in keys
    else:
        assert not [key for key in keys if key.startswith("aws:")], "an existing cluster needs no AWS"


def test_the_local_example_runs_the_extender_without_device_plugin_or_waits() -> None:
    """Pulumi.local.yaml is the end-to-end suite's stack: a bare API server (no nodes, no
    controllers, no internet for the device plugin's chart)."""
    values, secret_keys = example_stack_values(REPO_ROOT / "Pulumi.local.yaml")
    config = parse_stack_config(values, "local", plugin_kubernetes_version(), secret_keys)
    assert config.existing_cluster is not None
    assert config.existing_cluster.skip_await is True
    assert config.device_plugin.enabled is False
    assert config.images.extender is not None
    assert config.images.gpu_scheduler is not None


def test_dev_example_is_small_and_prod_spreads_over_three_zones() -> None:
    dev = parse_stack_config(
        example_stack_values(REPO_ROOT / "Pulumi.dev.yaml")[0], "dev", plugin_kubernetes_version()
    )
    prod = parse_stack_config(
        example_stack_values(REPO_ROOT / "Pulumi.prod.yaml")[0], "prod", plugin_kubernetes_version()
    )
    assert isinstance(dev.network, NewVpc)
    assert isinstance(prod.network, NewVpc)
    assert (dev.network.availability_zones, dev.network.nat_gateways) == (2, "single")
    assert (prod.network.availability_zones, prod.network.nat_gateways) == (3, "onePerAz")
    assert [group.capacity_type for group in dev.gpu_node_groups] == ["SPOT"]
    assert any(len(group.instance_types) > 1 for group in prod.gpu_node_groups)


def test_an_existing_cluster() -> None:
    config = stack_config(
        existing_values(
            "extender",
            existingCluster={
                "kubeconfig": kubeconfig_text(clusters=2),
                "context": "ctx-cluster-1",
                "skipAwait": "true",
            },
            devicePlugin={"enabled": "false"},
            scheduler={"extenderWeight": MAX_EXTENDER_WEIGHT},
        ),
        secret_keys={"existingCluster"},
    )
    assert config.existing_cluster == ExistingClusterSettings(
        kubeconfig=kubeconfig_text(clusters=2), context="ctx-cluster-1", skip_await=True
    )
    assert CLIENT_KEY_DATA not in repr(config), "the kubeconfig stays out of reprs (and so of logs)"
    assert (config.images.extender, config.images.gpu_scheduler) == (
        EXTENDER_REFERENCE,
        GPU_SCHEDULER_REFERENCE,
    )
    assert config.device_plugin.enabled is False
    assert config.scheduler.extender_weight == MAX_EXTENDER_WEIGHT
    default = stack_config(existing_values("plugin"), secret_keys={"existingCluster"})
    assert default.existing_cluster is not None
    assert (default.existing_cluster.context, default.existing_cluster.skip_await) == (None, False)
    assert default.device_plugin.enabled is True
    assert default.scheduler.extender_weight == 1


def test_an_existing_cluster_needs_only_the_image_of_its_mode() -> None:
    """Plus the extender image while the webhook (the same image) runs."""
    values = existing_values("plugin", webhook={"enabled": False})
    values["images"] = {"gpuScheduler": GPU_SCHEDULER_REFERENCE}
    assert stack_config(values, secret_keys={"existingCluster"}).images.extender is None
    values["webhook"] = {"enabled": True}
    with pytest.raises(
        StackConfigError, match=r"images\.extender: required with existingCluster while webhook"
    ):
        stack_config(values, secret_keys={"existingCluster"})
    values = existing_values("extender-cached")
    values["images"] = {"extender": EXTENDER_REFERENCE}
    assert stack_config(values, secret_keys={"existingCluster"}).images.gpu_scheduler is None


def test_gpu_groups_are_read_with_their_config_key() -> None:
    config = stack_config(
        {
            "gpuNodeGroups": [
                GROUP,
                {
                    "name": "b",
                    "instanceTypes": ["g6e.xlarge", "g6e.2xlarge"],
                    "capacityType": "spot",
                    "minSize": "0",
                    "desiredSize": 2,
                    "maxSize": 5,
                    "diskSizeGib": 200,
                },
            ]
        }
    )
    second = config.gpu_node_groups[1]
    assert second.config_key == f"{PROJECT}:gpuNodeGroups[1]"
    assert second.instance_types == ("g6e.xlarge", "g6e.2xlarge")
    assert second.capacity_type == "SPOT"
    assert (second.scaling.min_size, second.scaling.desired_size, second.scaling.max_size) == (0, 2, 5)
    assert second.disk_size_gib == 200
    assert config.gpu_node_groups[0].capacity_type == "ON_DEMAND"


def test_existing_network() -> None:
    config = stack_config(
        {
            "network": {
                "vpcId": "vpc-0123456789abcdef0",
                "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
            }
        }
    )
    assert config.network == ExistingNetwork(
        vpc_id="vpc-0123456789abcdef0",
        private_subnet_ids=("subnet-0123456789abcdef0", "subnet-0fedcba9876543210"),
    )


def test_extender_cached_mode_is_a_valid_mode() -> None:
    config = stack_config({"schedulerMode": "extender-cached"})
    assert config.scheduler_mode == "extender-cached"


def test_plugin_mode_does_not_check_the_kube_scheduler_image() -> None:
    """Only the extender modes run the upstream image; plugin mode ignores its tag."""
    config = stack_config(
        {
            "schedulerMode": "plugin",
            "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.30.0"},
        }
    )
    assert config.scheduler_mode == "plugin"


def test_another_minor_version_with_a_matching_scheduler_image() -> None:
    config = stack_config(
        {
            "schedulerMode": "extender",
            "kubernetesVersion": "1.34",
            "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.34.3"},
            "clusterAutoscaler": {"imageTag": "v1.34.2"},
        }
    )
    assert config.kubernetes_version == "1.34"


BAD_VALUES: list[tuple[dict[str, Any], str, str]] = [
    (
        {"schedulerMode": "both"},
        "schedulerMode",
        "must be one of extender, extender-cached, plugin, not 'both'",
    ),
    (
        {"schedulerMode": "extender_cached"},
        "schedulerMode",
        "must be one of extender, extender-cached, plugin",
    ),
    ({"schedulerMod": "plugin"}, "schedulerMod", "unknown key"),
    ({"kubernetesVersion": "1.35.2"}, "kubernetesVersion", "must look like 1.35"),
    ({"kubernetesVersion": "v1.35"}, "kubernetesVersion", "must look like 1.35"),
    ({"clusterName": "-leading-dash"}, "clusterName", "is not valid"),
    # The cluster name is also the ECR repositories' namespace, which ECR refuses in uppercase,
    # with a trailing separator or with two separators in a row (CreateRepository would fail mid-up).
    ({"clusterName": "GPU-Lab"}, "clusterName", "lowercase"),
    ({"clusterName": "gpu-lab-"}, "clusterName", "is not valid"),
    ({"clusterName": "gpu_lab_"}, "clusterName", "is not valid"),
    ({"clusterName": "gpu--lab"}, "clusterName", "is not valid"),
    ({"gpuTaint": "yes"}, "gpuTaint", "must be true or false"),
    ({"gpuNodeGroups": []}, "gpuNodeGroups", "at least one GPU node group"),
    ({"gpuNodeGroups": [{**GROUP, "perZone": "yes"}]}, "gpuNodeGroups[0].perZone", "must be true or false"),
    ({"gpuNodeGroups": [{**GROUP, "perZone": 1}]}, "gpuNodeGroups[0].perZone", "must be true or false"),
    (
        {"autoscaling": "karpenter", "gpuNodeGroups": [GROUP, {**GROUP, "name": "b", "perZone": True}]},
        "gpuNodeGroups[1].perZone",
        "only with autoscaling: cluster-autoscaler or none; Karpenter launches each node from its "
        "NodePools, not from these groups: set karpenter.perZone for one NodePool per zone",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"perZone": "yes"}},
        "karpenter.perZone",
        "must be true or false",
    ),
    ({"autoscaling": "karpenter", "karpenter": {"perZone": 1}}, "karpenter.perZone", "must be true or false"),
    ({"karpenter": {"perZone": True}}, "karpenter", "only with autoscaling: karpenter"),
    ({"gpuNodeGroups": "g5.xlarge"}, "gpuNodeGroups", "must be a list"),
    (
        {"gpuNodeGroups": [GROUP, {"name": "b", "instanceTypes": []}]},
        "gpuNodeGroups[1].instanceTypes",
        "at least 1",
    ),
    (
        {"gpuNodeGroups": [{"name": "a", "instanceTypes": ["G5.XLARGE"]}]},
        "gpuNodeGroups[0].instanceTypes[0]",
        "EC2",
    ),
    (
        {"gpuNodeGroups": [{"name": "a", "instanceTypes": ["g5.xlarge", "g5.xlarge"]}]},
        "gpuNodeGroups[0].instanceTypes",
        "must not repeat",
    ),
    (
        {"gpuNodeGroups": [{**GROUP, "capacityType": "SPOT"}]},
        "gpuNodeGroups[0].capacityType",
        "on-demand, spot",
    ),
    (
        {"gpuNodeGroups": [{**GROUP, "minSize": 3, "maxSize": 2}]},
        "gpuNodeGroups[0]",
        "minSize <= desiredSize <= maxSize",
    ),
    ({"gpuNodeGroups": [{**GROUP, "maxSize": 0}]}, "gpuNodeGroups[0].maxSize", "must be 1..1000"),
    ({"gpuNodeGroups": [GROUP, GROUP]}, "gpuNodeGroups[1].name", "used by another GPU node group"),
    ({"gpuNodeGroups": [{"instanceTypes": ["g5.xlarge"]}]}, "gpuNodeGroups[0]", "needs name"),
    (
        {"gpuNodeGroups": [{"name": "Big_GPUs", "instanceTypes": ["g5.xlarge"]}]},
        "gpuNodeGroups[0].name",
        "lowercase",
    ),
    (
        {"gpuNodeGroups": [{**GROUP, "instanceType": "g5.xlarge"}]},
        "gpuNodeGroups[0]",
        "unknown key 'instanceType'",
    ),
    ({"gpuNodeGroups": [{**GROUP, "diskSizeGib": 10}]}, "gpuNodeGroups[0].diskSizeGib", "must be 20..16384"),
    ({"gpuNodeGroups": [{**GROUP, "minSize": 1.5}]}, "gpuNodeGroups[0].minSize", "must be an integer"),
    ({"network": {"availabilityZones": 1}}, "network.availabilityZones", "must be 2..6"),
    ({"network": {"vpcCidr": "10.0.0.0/8"}}, "network.vpcCidr", "prefix length must be /16../20"),
    ({"network": {"vpcCidr": "banana"}}, "network.vpcCidr", "not an IPv4 CIDR block"),
    ({"network": {"natGateways": "perAz"}}, "network.natGateways", "single, onePerAz"),
    (
        {"network": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0123456789abcdef0"]}},
        "network.privateSubnetIds",
        "at least 2",
    ),
    ({"network": {"vpcId": "vpc-0123456789abcdef0"}}, "network", "needs vpcId and privateSubnetIds"),
    ({"network": {"vpcId": "vpc-0123456789abcdef0", "vpcCidr": "10.0.0.0/16"}}, "network", "give either"),
    (
        {
            "network": {
                "vpcId": "vpc-1",
                "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0fedcba987654321"],
            }
        },
        "network.vpcId",
        "is not valid",
    ),
    ({"network": "10.0.0.0/16"}, "network", "must be an object"),
    ({"systemNodeGroup": {"minSize": 0}}, "systemNodeGroup.minSize", "must be 1..1000"),
    ({"systemNodeGroup": {"instanceTypes": []}}, "systemNodeGroup.instanceTypes", "at least 1"),
    ({"extender": {"replicas": 1}}, "extender.replicas", "must be 2..20"),
    ({"extender": {"maxBodyBytes": 0}}, "extender.maxBodyBytes", "must be 1.."),
    ({"extender": {"maxNodes": "many"}}, "extender.maxNodes", "must be an integer"),
    (
        {"extender": {"maxBodyBytes": 256 * 2**20}},
        "extender",
        "resources.limits.memory (768Mi) is below what the extender can hold at once with a 256 MiB"
        " body limit (maxBodyBytes): 864Mi",
    ),
    (
        {"extender": {"maxBufferedBodyBytes": 2**20}},
        "extender",
        "maxBufferedBodyBytes (1048576) is below the body limit (134217728, maxBodyBytes)",
    ),
    (
        {"extender": {"maxBufferedBodyBytes": 640 * 2**20}},
        "extender",
        "resources.limits.memory (768Mi) is below what the extender can hold at once with a 128 MiB"
        " body limit (maxBodyBytes): 864Mi (96 MiB plus maxBufferedBodyBytes plus the body limit",
    ),
    (
        {"extender": {"resources": {"limits": {"memory": "400Mi"}}}},
        "extender",
        "resources.limits.memory (400Mi) is below what the extender can hold at once with a 128 MiB"
        " body limit (maxBodyBytes): 480Mi",
    ),
    (
        {"extender": {"resources": {"limits": {"memory": "64Mi"}}}},
        "extender.resources",
        "limits.memory (64Mi) must be at least requests.memory",
    ),
    (
        {"extender": {"resources": {"requests": {"cpu": "lots"}}}},
        "extender.resources.requests.cpu",
        "quantity",
    ),
    ({"extender": {"resources": {"requests": {"cpu": "0"}}}}, "extender.resources.requests.cpu", "positive"),
    ({"extender": {"resources": {"limits": {"cpu": "1"}}}}, "extender.resources.limits", "unknown key 'cpu'"),
    ({"scheduler": {"replicas": True}}, "scheduler.replicas", "must be an integer"),
    ({"scheduler": {"replicas": 9}}, "scheduler.replicas", "must be 1..5"),
    (
        {
            "schedulerMode": "extender",
            "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler:v1.34.2"},
        },
        "scheduler.kubeSchedulerImage",
        "tag 'v1.34.2' must be v1.35.<patch> to match kubernetesVersion 1.35",
    ),
    (
        {"schedulerMode": "extender", "scheduler": {"kubeSchedulerImage": "registry.k8s.io/kube-scheduler"}},
        "scheduler.kubeSchedulerImage",
        "tag '(none)' must be v1.35.<patch>",
    ),
    (
        {"schedulerMode": "extender", "kubernetesVersion": "1.34"},
        "scheduler.kubeSchedulerImage",
        "must be v1.34.<patch>",
    ),
    ({"kubernetesVersion": "1.34"}, "kubernetesVersion", "or set schedulerMode: extender-cached"),
    (
        {"schedulerMode": "extender-cached", "kubernetesVersion": "1.34"},
        "scheduler.kubeSchedulerImage",
        "must be v1.34.<patch>",
    ),
    (
        {"schedulerMode": "plugin", "kubernetesVersion": "1.34"},
        "kubernetesVersion",
        "plugin mode runs the gpu-scheduler built from Kubernetes v1.35",
    ),
    ({"certificates": {"validityHours": 1}}, "certificates.validityHours", "must be 24.."),
    (
        {"certificates": {"validityHours": 720, "earlyRenewalHours": 720}},
        "certificates",
        "earlyRenewalHours (720) must be less than validityHours (720)",
    ),
    (
        {"certificates": {"validityHours": 9000, "caValidityHours": 9000}},
        "certificates",
        "caValidityHours (9000) must be more than validityHours (9000)",
    ),
    ({"certificates": {"caValidityHours": 10}}, "certificates.caValidityHours", "must be 24.."),
    ({"images": {"keepImages": 0}}, "images.keepImages", "must be 1..1000"),
    ({"images": {"forceDelete": "sometimes"}}, "images.forceDelete", "must be true or false"),
    (
        {"devicePlugin": {"chartVersion": "latest"}},
        "devicePlugin.chartVersion",
        "a chart version such as 0.17.4",
    ),
]


BAD_VALUES += [
    ({"devicePlugin": {"enabled": "maybe"}}, "devicePlugin.enabled", "must be true or false"),
    ({"scheduler": {"extenderWeight": 0}}, "scheduler.extenderWeight", "must be 1..100"),
    ({"scheduler": {"extenderWeight": 101}}, "scheduler.extenderWeight", "must be 1..100"),
    ({"scheduler": {"capacityTypeWeight": 0}}, "scheduler.capacityTypeWeight", "must be 1..100"),
    ({"scheduler": {"capacityTypeWeight": "heavy"}}, "scheduler.capacityTypeWeight", "must be an integer"),
    (
        {"scheduler": {"extenderHttpTimeoutSeconds": 1}},
        "scheduler.extenderHttpTimeoutSeconds",
        "must be 2..60",
    ),
    (
        {"scheduler": {"extenderHttpTimeoutSeconds": 61}},
        "scheduler.extenderHttpTimeoutSeconds",
        "must be 2..60",
    ),
    (
        {"scheduler": {"extenderHttpTimeoutSeconds": "5s"}},
        "scheduler.extenderHttpTimeoutSeconds",
        "must be an integer",
    ),
    ({"scheduler": {"percentageOfNodesToScore": 0}}, "scheduler.percentageOfNodesToScore", "must be 1..100"),
    (
        {"scheduler": {"percentageOfNodesToScore": 101}},
        "scheduler.percentageOfNodesToScore",
        "must be 1..100",
    ),
    (
        {"scheduler": {"percentageOfNodesToScore": "50%"}},
        "scheduler.percentageOfNodesToScore",
        "must be an integer",
    ),
    (
        {"images": {"extender": EXTENDER_REFERENCE}},
        "images.extender",
        "only with existingCluster: an EKS stack builds this image",
    ),
    (
        {"images": {"gpuScheduler": GPU_SCHEDULER_REFERENCE}},
        "images.gpuScheduler",
        "only with existingCluster",
    ),
    (
        {"clusterAccess": {"adminRoleArns": ["platform-admin"]}},
        "clusterAccess.adminRoleArns[0]",
        "an IAM role or user ARN such as arn:aws:iam::123456789012:role/platform-admin",
    ),
    (
        {"clusterAccess": {"publicAccessCidrs": ["203.0.113.0/33"]}},
        "clusterAccess.publicAccessCidrs[0]",
        "is not a CIDR block",
    ),
    (
        {"clusterAccess": {"publicAccessCidrs": []}},
        "clusterAccess.publicAccessCidrs",
        "must list at least one CIDR block",
    ),
    (
        {"clusterAccess": {"endpointPublicAccess": False, "publicAccessCidrs": ["203.0.113.0/24"]}},
        "clusterAccess.publicAccessCidrs",
        "only with endpointPublicAccess: true",
    ),
    (
        {"clusterAccess": {"endpointPublicAccess": False, "endpointPrivateAccess": False}},
        "clusterAccess",
        "both false: nothing could reach the API",
    ),
    (
        {"autoscaling": "karpenter", "clusterName": "a" * 81},
        "clusterName",
        "at most 80 characters with autoscaling: karpenter",
    ),
    ({"autoscaling": "keda"}, "autoscaling", "must be one of none, karpenter, cluster-autoscaler"),
    (
        {"karpenter": {"gpuLimit": 4}},
        "karpenter",
        "only with autoscaling: karpenter; autoscaling is cluster-autoscaler",
    ),
    (
        {"autoscaling": "karpenter", "clusterAutoscaler": {"chartVersion": "9.59.0"}},
        "clusterAutoscaler",
        "only with autoscaling: cluster-autoscaler; autoscaling is karpenter",
    ),
    ({"autoscaling": "karpenter", "karpenter": {"gpuLimit": 0}}, "karpenter.gpuLimit", "must be 1..100000"),
    (
        {"autoscaling": "karpenter", "karpenter": {"consolidationPolicy": "Always"}},
        "karpenter.consolidationPolicy",
        "must be one of WhenEmpty, WhenEmptyOrUnderutilized",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"consolidateAfter": "5 minutes"}},
        "karpenter.consolidateAfter",
        "a duration such as 30s, 5m or 720h, or Never",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"disruptionBudget": "110%"}},
        "karpenter.disruptionBudget",
        "a node count such as 0 or 1, or a percentage",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"driftBudget": -1}},
        "karpenter.driftBudget",
        "a node count such as 0 or 1, or a percentage",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"terminationGracePeriod": "Never"}},
        "karpenter.terminationGracePeriod",
        "a duration such as 30m or 48h",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"createSpotServiceLinkedRole": "yes"}},
        "karpenter.createSpotServiceLinkedRole",
        "must be true or false",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"resources": {"limits": {"memory": "512Mi"}}}},
        "karpenter.resources",
        "limits.memory (512Mi) must be at least requests.memory (1Gi)",
    ),
    (
        {"autoscaling": "karpenter", "karpenter": {"amiAlias": "al2@latest"}},
        "karpenter.amiAlias",
        "al2023@latest or a pinned release",
    ),
    ({"autoscaling": "karpenter", "karpenter": {"chartVersion": "v1"}}, "karpenter.chartVersion", "1.14.1"),
    ({"autoscaling": "karpenter", "karpenter": {"speed": 1}}, "karpenter", "unknown key 'speed'"),
    (
        {"clusterAutoscaler": {"imageTag": "v1.34.2"}},
        "clusterAutoscaler.imageTag",
        "must be v1.35.<patch> to match kubernetesVersion 1.35",
    ),
    (
        {"clusterAutoscaler": {"imageTag": "latest"}},
        "clusterAutoscaler.imageTag",
        "a release tag such as v1.35.2",
    ),
    (
        {"clusterAutoscaler": {"scaleDownUnneededTime": "ten minutes"}},
        "clusterAutoscaler.scaleDownUnneededTime",
        "a duration such as 10m",
    ),
]


@pytest.mark.parametrize(("values", "key", "problem"), BAD_VALUES, ids=[case[1] for case in BAD_VALUES])
def test_a_bad_value_fails_with_its_key(values: dict[str, Any], key: str, problem: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config(values)
    message = str(raised.value)
    assert message.startswith(f"{PROJECT}:{key}: "), message
    assert problem in message


def test_a_budget_may_be_a_yaml_number() -> None:
    """``driftBudget: 0`` in a stack file arrives as the number 0, not the string."""
    pools = stack_config({"autoscaling": "karpenter", "karpenter": {"driftBudget": 0, "disruptionBudget": 2}})
    assert (pools.karpenter.node_pools.drift_budget, pools.karpenter.node_pools.disruption_budget) == (
        "0",
        "2",
    )


EKS_ONLY_VALUES: dict[str, object] = {
    "clusterName": "platform",
    "network": {"natGateways": "single"},
    "systemNodeGroup": {"minSize": 2},
    "gpuNodeGroups": [GROUP],
    "gpuTaint": "false",
    "clusterAccess": {"endpointPrivateAccess": True},
    "autoscaling": "none",
    "karpenter": {"gpuLimit": 8},
    "clusterAutoscaler": {"scaleDownUnneededTime": "5m"},
    "observability": {"enabled": True},
}
NOT_YAML = "clusters: [\n  client-key-data: " + CLIENT_KEY_DATA
NO_CONTEXT = kubeconfig_text().replace("current-context: platform", "current-context: ''")
UNKNOWN_USER = kubeconfig_text().replace("user: admin", "user: nobody")
BAD_EXISTING_CLUSTER: list[tuple[dict[str, Any], str, str]] = [
    *(
        (
            existing_values("extender", **{key: EKS_ONLY_VALUES[key]}),
            key,
            "existingCluster is set, so this stack creates nothing in AWS",
        )
        for key in EKS_ONLY_KEYS
    ),
    (
        existing_values("extender", images={"extender": EXTENDER_REFERENCE, "keepImages": 3}),
        "images.keepImages",
        "an ECR setting; existingCluster is set",
    ),
    (
        existing_values("extender", images={"extender": EXTENDER_REFERENCE, "forceDelete": True}),
        "images.forceDelete",
        "creates no ECR repository",
    ),
    (
        existing_values("extender", images={"gpuScheduler": GPU_SCHEDULER_REFERENCE}),
        "images.extender",
        "required with existingCluster in extender mode",
    ),
    (
        existing_values("plugin", images={"extender": EXTENDER_REFERENCE}),
        "images.gpuScheduler",
        "required with existingCluster in plugin mode",
    ),
    (
        existing_values("extender", images={"extender": "Registry.Example.com/Extender"}),
        "images.extender",
        "an image reference such as registry.example.com/scheduler-extender:v1",
    ),
    (existing_values("extender", existingCluster={}), "existingCluster", "needs kubeconfig"),
    (existing_values("extender", existingCluster="a-kubeconfig"), "existingCluster", "must be an object"),
    (
        existing_values("extender", existingCluster={"kubeconfig": kubeconfig_text(), "kubeContext": "x"}),
        "existingCluster",
        "unknown key 'kubeContext'",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": kubeconfig_text(), "skipAwait": "yes"}),
        "existingCluster.skipAwait",
        "must be true or false",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": NOT_YAML}),
        "existingCluster.kubeconfig",
        "is not YAML (line",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": "[]"}),
        "existingCluster.kubeconfig",
        "must be a mapping",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": "clusters: []\nusers: []\n"}),
        "existingCluster.kubeconfig",
        "clusters must be a non-empty list",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": kubeconfig_text(), "context": "staging"}),
        "existingCluster.kubeconfig",
        "has no context 'staging' (existingCluster.context); it has ctx-cluster-0, platform",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": NO_CONTEXT}),
        "existingCluster.kubeconfig",
        "has no current-context: set existingCluster.context",
    ),
    (
        existing_values("extender", existingCluster={"kubeconfig": UNKNOWN_USER}),
        "existingCluster.kubeconfig",
        "context 'platform' names user 'nobody', which is not in its users",
    ),
]


@pytest.mark.parametrize(
    ("values", "key", "problem"), BAD_EXISTING_CLUSTER, ids=[case[1] for case in BAD_EXISTING_CLUSTER]
)
def test_a_bad_existing_cluster_value_fails_with_its_key_and_no_secret(
    values: dict[str, Any], key: str, problem: str
) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config(values, secret_keys={"existingCluster"})
    message = str(raised.value)
    assert message.startswith(f"{PROJECT}:{key}: "), message
    assert problem in message
    assert CLIENT_KEY_DATA not in message


def test_a_kubeconfig_outside_a_secret_is_refused() -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config(existing_values("extender"))
    message = str(raised.value)
    assert message.startswith(f"{PROJECT}:existingCluster.kubeconfig: must be a secret")
    assert "pulumi config set --secret --path existingCluster.kubeconfig < kubeconfig.yaml" in message
    assert CLIENT_KEY_DATA not in message


def test_kubernetes_version_helpers() -> None:
    assert cluster_minor("1.35") == 35
    assert cluster_minor("1.035") is None
    assert release_tag_minor("v1.35.8") == 35
    assert release_tag_minor("v1.35") is None
    assert image_tag("registry.local:5000/team/kube-scheduler:v1.35.8") == "v1.35.8"
    assert image_tag("registry.local:5000/kube-scheduler") == ""
    assert image_tag("repo/kube-scheduler:v1.35.8@sha256:" + "a" * 64) == "v1.35.8"
    go_mod = (
        "module x\n\nrequire (\n\t// k8s.io/kubernetes v9.9.9 in a comment\n\tk8s.io/kubernetes v1.35.8\n)\n"
    )
    assert go_mod_kubernetes_version(go_mod) == "v1.35.8"
    assert go_mod_kubernetes_version("module x\nrequire k8s.io/kubernetes v1.34.1\n") == "v1.34.1"
    with pytest.raises(ValueError, match=r"does not require k8s\.io/kubernetes"):
        go_mod_kubernetes_version("module x\n")


@pytest.fixture
def pulumi_config() -> Any:
    """Set Pulumi's config for one test (as the engine would), and clear it afterwards."""
    with mock_aws():
        pulumi.runtime.set_mocks(StackMocks(), project=PROJECT, stack="staging", preview=False)
        yield pulumi.runtime.set_all_config
    pulumi.runtime.set_all_config({})


def test_load_stack_config_reads_pulumi_config(pulumi_config: Any) -> None:
    pulumi_config(
        {
            "aws:region": "eu-west-1",
            f"{PROJECT}:schedulerMode": "plugin",
            f"{PROJECT}:gpuNodeGroups": json.dumps([GROUP]),
        }
    )
    config = load_stack_config()
    assert config.scheduler_mode == "plugin"
    assert config.cluster_name == "gpu-scheduler-staging"
    assert [group.name for group in config.gpu_node_groups] == ["a"]


def test_load_stack_config_refuses_a_misspelt_key(pulumi_config: Any) -> None:
    pulumi_config({f"{PROJECT}:gpuTaints": "false"})
    with pytest.raises(StackConfigError, match=rf"^{PROJECT}:gpuTaints: unknown key"):
        load_stack_config()


def test_load_stack_config_reads_secret_keys_as_the_language_host_passes_them(
    pulumi_config: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pulumi-language-python hands the program PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS."""
    pulumi_config({})
    values = {f"{PROJECT}:{key}": json.dumps(value) for key, value in existing_values("plugin").items()}
    values[f"{PROJECT}:schedulerMode"] = "plugin"
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(values))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps([f"{PROJECT}:existingCluster"]))
    config = load_stack_config()
    assert config.existing_cluster is not None
    assert config.existing_cluster.kubeconfig == kubeconfig_text()
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps([]))
    with pytest.raises(StackConfigError, match=rf"^{PROJECT}:existingCluster\.kubeconfig: must be a secret"):
        load_stack_config()


def test_a_default_cluster_name_from_an_uppercase_stack_name_is_refused_before_ecr_would() -> None:
    with pytest.raises(StackConfigError) as raised:
        parse_stack_config({}, stack="Dev", plugin_version=plugin_kubernetes_version())
    assert str(raised.value).startswith(f"{PROJECT}:clusterName: 'gpu-scheduler-Dev' is not valid: ")
    assert parse_stack_config({}, stack="dev", plugin_version=plugin_kubernetes_version()).cluster_name == (
        "gpu-scheduler-dev"
    )
