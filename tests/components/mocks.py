"""Pulumi mocks for the whole program, and a runner that records what it declares.

``StackMocks`` stands in for the Pulumi engine and providers. It records every resource's
inputs as the engine receives them (a secret input stays wrapped in Pulumi's secret
marker, so tests can see what the program marked secret) and answers:

- ``aws.ec2.get_instance_type`` from moto's EC2 instance-type catalogue through boto3;
- ``aws.ecr.get_authorization_token`` from moto's ECR;
- ``aws.get_availability_zones`` and ``aws.ec2.get_subnet`` from moto's EC2;
- ``awsx.ec2.Vpc`` by creating the VPC and a private and a public subnet per zone in moto (so
  the subnets' zones are moto's answer, as EC2's would be);
- ``aws.eks.get_addon_version`` with a version naming the add-on and Kubernetes version
  (moto has no DescribeAddonVersions), or for an add-on in ``offered_addon_versions`` (the
  CloudWatch add-on's newest version in the region, ``OFFERED_OBSERVABILITY_VERSION``) that version;
- ``aws.get_caller_identity`` from moto's STS; ``aws.get_region`` and ``aws.get_partition``
  for the mocked region (the partition from botocore's endpoint data);
- ``aws.ecr.Repository`` by creating the repository in moto (its URL and registry id);
- ``tls`` keys, requests and certificates with real ones made for the same inputs
  (``tls_provider``);
- the other outputs a few resources must have that are not inputs (kubeconfig, ARNs,
  subnet ids, image refs) with plain placeholders;
- ``eks.Cluster``'s two security groups with different ids: pulumi-eks' own
  (``clusterSecurityGroupId``, ``PULUMI_EKS_SECURITY_GROUP``) and the one EKS creates, reached
  through the ``eksCluster`` resource reference (``EKS_SECURITY_GROUP``), as the real
  component returns them.

Any other invoke fails the test: the program should call nothing else.
"""

import asyncio
import base64
import hashlib
import ipaddress
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import boto3
import pulumi
from botocore.exceptions import ClientError
from moto import mock_aws
from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks
from pulumi.runtime.mocks import MockMonitor

from tests.components import tls_provider

REGION = "us-west-2"
PROJECT = "gpu-scheduler-eks"
STACK = "test"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
SIG_KEY = "4dabf18193072939515e22adb298388d"
PULUMI_EKS_SECURITY_GROUP = "sg-0aaaaaaaaaaaaaaa1"
"""pulumi-eks' own cluster security group (its ``clusterSecurityGroupId`` output)."""
EKS_SECURITY_GROUP = "sg-0eeeeeeeeeeeeeee2"
"""The security group EKS creates for the cluster (``eksCluster.vpcConfig.clusterSecurityGroupId``),
the one managed nodes get."""
AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
OFFERED_OBSERVABILITY_VERSION = "v6.4.0-eksbuild.1"
"""What the mocked region offers as the newest amazon-cloudwatch-observability add-on version."""


def moto_per_gpu_memory(instance_types: list[str]) -> int:
    """The smallest per-GPU memory among the types, read from moto's EC2 through boto3 (the
    catalogue the mocks answer ``get_instance_type`` from), as the tests' own expectation."""
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        described = ec2.describe_instance_types(InstanceTypes=instance_types)["InstanceTypes"]
    sizes: list[int] = [
        gpu["MemoryInfo"]["SizeInMiB"] for item in described for gpu in item["GpuInfo"]["Gpus"]
    ]
    return min(sizes)


def moto_registry_credentials() -> tuple[str, str]:
    """(user, password) of moto's ECR authorization token, decoded as ECR clients do."""
    with mock_aws():
        ecr = boto3.client("ecr", region_name=REGION)
        token = ecr.get_authorization_token()["authorizationData"][0]["authorizationToken"]
    user, password = base64.b64decode(token).decode().split(":", 1)
    return user, password


def is_secret(value: object) -> bool:
    """Whether an input arrived at the engine wrapped as a Pulumi secret."""
    return isinstance(value, dict) and value.get(SIG_KEY) == SECRET_SIG


def reveal(value: Any) -> Any:
    """The value with every secret marker removed (for checks on the plain content)."""
    if is_secret(value):
        return reveal(value["value"])
    if isinstance(value, dict):
        return {key: reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal(item) for item in value]
    return value


def strings_outside_secrets(value: Any) -> Iterator[str]:
    """Every string in ``value`` that is not inside a secret (what would show in plain text)."""
    if is_secret(value):
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from strings_outside_secrets(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_outside_secrets(item)
    elif isinstance(value, str):
        yield value


@dataclass(frozen=True)
class Declared:
    """One resource the program declared."""

    type: str
    name: str
    inputs: dict[str, Any]
    """As received, secrets still wrapped; ``reveal`` for the plain values."""
    parents: tuple[str, ...]
    """Types of the ancestors, outermost first (from the URN)."""
    custom: bool
    depends_on: frozenset[tuple[str, str]] = frozenset()
    """(type, name) of every resource it waits for: ``depends_on`` and its inputs' sources."""
    provider: str = ""
    """The URN of the provider resource it was registered with ("" for the default provider)."""
    property_dependencies: frozenset[tuple[str, str, str]] = frozenset()
    """(input property, type, name): the resources each input property's value comes from."""
    ignore_changes: tuple[str, ...] = ()
    """The ``ignore_changes`` option, as the engine receives it (camelCase property paths)."""

    @property
    def plain(self) -> dict[str, Any]:
        revealed: dict[str, Any] = reveal(self.inputs)
        return revealed


class StackMocks(Mocks):
    """The engine and providers for one program run; call inside moto's ``mock_aws``."""

    def __init__(self) -> None:
        self.ec2 = boto3.client("ec2", region_name=REGION)
        self.ecr = boto3.client("ecr", region_name=REGION)
        self.sts = boto3.client("sts", region_name=REGION)
        self.registered: dict[tuple[str, str], MockResourceArgs] = {}
        self.calls: list[MockCallArgs] = []
        self.monitor: MockMonitor | None = None
        """Set by ``run_stack``: where the children of remote components are registered."""
        self.children: set[str] = set()
        """URNs of remote components' children the mocks made up (not declared by the program)."""
        self.offered_addon_versions = {"amazon-cloudwatch-observability": OFFERED_OBSERVABILITY_VERSION}
        """Add-ons whose newest version in the region is a real version string (a test may change it)."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered[(args.typ, args.name)] = args
        # A custom resource's outputs include its inputs; a (remote) component's outputs are
        # its own properties, often of another type than the input of the same name.
        outputs = dict(args.inputs) if args.custom else {}
        outputs.update(self._extra_outputs(args))
        return f"{args.name}-id", outputs

    def remote_child(self, component: str, type_: str, name: str, state: dict[str, Any]) -> dict[str, Any]:
        """Register a child of a remote component of type ``component`` (mocks never construct
        one) and return the resource reference its output property holds: the program reads the
        child's outputs (``state``) through it."""
        assert self.monitor is not None, "run_stack sets the monitor"
        urn = f"urn:pulumi:{STACK}::{PROJECT}::{component}${type_}::{name}"
        self.monitor.resources[urn] = MockMonitor.ResourceRegistration(urn, f"{name}-id", state)
        self.children.add(urn)
        return {SIG_KEY: RESOURCE_SIG, "urn": urn, "id": f"{name}-id"}

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.calls.append(args)
        if args.token == "aws:ec2/getInstanceType:getInstanceType":
            return self._instance_type(args.args["instanceType"])
        if args.token == "aws:ec2/getSubnet:getSubnet":
            return self._subnet(args.args["id"])
        return self._lookup(args.token, args.args), []

    def _lookup(self, token: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The invokes that cannot fail here."""
        if token == "aws:ecr/getAuthorizationToken:getAuthorizationToken":
            return self._authorization_token(args.get("registryId"))
        if token == "aws:index/getCallerIdentity:getCallerIdentity":
            identity = self.sts.get_caller_identity()
            return {"accountId": identity["Account"], "arn": identity["Arn"], "userId": identity["UserId"]}
        if token == "aws:eks/getAddonVersion:getAddonVersion":
            return self._addon_version(args["addonName"], args["kubernetesVersion"])
        if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            return self._availability_zones(args)
        if token == "aws:index/getRegion:getRegion":
            return {"region": REGION, "name": REGION, "endpoint": f"ec2.{REGION}.amazonaws.com"}
        if token == "aws:index/getPartition:getPartition":
            partition = boto3.session.Session().get_partition_for_region(REGION)
            return {"partition": partition, "dnsSuffix": "amazonaws.com", "id": partition}
        raise AssertionError(f"unexpected invoke {token}")

    def _instance_type(self, instance_type: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The provider's getInstanceType result, from moto's DescribeInstanceTypes."""
        try:
            [described] = self.ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"]
        except ClientError as error:
            return {}, [("instanceType", str(error))]
        gpus = (described.get("GpuInfo") or {}).get("Gpus") or []
        return {
            "instanceType": described["InstanceType"],
            "gpuses": [
                {
                    "name": gpu["Name"],
                    "manufacturer": gpu["Manufacturer"],
                    "count": gpu["Count"],
                    "memorySize": gpu["MemoryInfo"]["SizeInMiB"],
                }
                for gpu in gpus
            ],
            "totalGpuMemory": (described.get("GpuInfo") or {}).get("TotalGpuMemoryInMiB", 0),
            "defaultVcpus": described["VCpuInfo"]["DefaultVCpus"],
            "memorySize": described["MemoryInfo"]["SizeInMiB"],
            "supportedArchitectures": described["ProcessorInfo"]["SupportedArchitectures"],
        }, []

    def _availability_zones(self, args: Mapping[str, Any]) -> dict[str, Any]:
        filters = [{"Name": "state", "Values": [args["state"]]}] if "state" in args else []
        zones = self.ec2.describe_availability_zones(Filters=filters)["AvailabilityZones"]
        return {
            "names": [zone["ZoneName"] for zone in zones],
            "zoneIds": [zone["ZoneId"] for zone in zones],
            "id": REGION,
        }

    def _subnet(self, subnet_id: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The provider's getSubnet result, from moto's DescribeSubnets."""
        try:
            [subnet] = self.ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"]
        except ClientError as error:
            return {}, [("id", str(error))]
        return {
            "id": subnet["SubnetId"],
            "availabilityZone": subnet["AvailabilityZone"],
            "availabilityZoneId": subnet["AvailabilityZoneId"],
            "vpcId": subnet["VpcId"],
            "cidrBlock": subnet["CidrBlock"],
        }, []

    def _vpc(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """awsx's Vpc made in moto: its zones (the given names, else the region's first
        ``numberOfAvailabilityZones``), a private and a public subnet in each."""
        zones = (
            inputs.get("availabilityZoneNames")
            or self._availability_zones({})["names"][: int(inputs["numberOfAvailabilityZones"])]
        )
        vpc = self.ec2.create_vpc(CidrBlock=inputs["cidrBlock"])["Vpc"]["VpcId"]
        blocks = ipaddress.ip_network(inputs["cidrBlock"]).subnets(new_prefix=24)
        subnets: dict[str, list[str]] = {"privateSubnetIds": [], "publicSubnetIds": []}
        for zone in zones:
            for ids in subnets.values():
                created = self.ec2.create_subnet(
                    VpcId=vpc, CidrBlock=str(next(blocks)), AvailabilityZone=zone
                )
                ids.append(created["Subnet"]["SubnetId"])
        return {"vpcId": vpc, **subnets}

    def _addon_version(self, addon: str, kubernetes_version: str) -> dict[str, Any]:
        """moto has no DescribeAddonVersions: a version that names the add-on and the Kubernetes
        version it was asked for, so a test can tell which version an add-on follows."""
        return {
            "addonName": addon,
            "kubernetesVersion": kubernetes_version,
            "mostRecent": True,
            "version": self.offered_addon_versions.get(
                addon, f"v0.0.0-{addon}-k8s{kubernetes_version}-eksbuild.1"
            ),
            "id": addon,
        }

    def _authorization_token(self, registry_id: str | None) -> dict[str, Any]:
        [data] = self.ecr.get_authorization_token(**({"registryIds": [registry_id]} if registry_id else {}))[
            "authorizationData"
        ]
        user, password = base64.b64decode(data["authorizationToken"]).decode().split(":", 1)
        return {
            "authorizationToken": data["authorizationToken"],
            "proxyEndpoint": data["proxyEndpoint"],
            "expiresAt": data["expiresAt"].isoformat(),
            "userName": user,
            "password": password,
            "registryId": registry_id or "",
        }

    def _extra_outputs(self, args: MockResourceArgs) -> dict[str, Any]:
        inputs = reveal(args.inputs)
        handler = _OUTPUTS.get(args.typ)
        if handler is None:
            return {}
        return handler(self, args.name, inputs)

    def _repository(self, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
        created = self.ecr.create_repository(
            repositoryName=inputs["name"],
            imageTagMutability=inputs["imageTagMutability"],
            imageScanningConfiguration={"scanOnPush": inputs["imageScanningConfiguration"]["scanOnPush"]},
        )["repository"]
        return {
            "repositoryUrl": created["repositoryUri"],
            "registryId": created["registryId"],
            "arn": created["repositoryArn"],
        }


_OUTPUTS: dict[str, Callable[[StackMocks, str, Mapping[str, Any]], dict[str, Any]]] = {
    "eks:index:Cluster": lambda mocks, name, inputs: {
        "kubeconfigJson": json.dumps(
            {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": inputs["name"]}]}
        ),
        "kubeconfig": {"apiVersion": "v1", "kind": "Config"},
        "clusterSecurityGroupId": PULUMI_EKS_SECURITY_GROUP,
        "eksCluster": mocks.remote_child(
            "eks:index:Cluster",
            AWS_EKS_CLUSTER,
            f"{name}-eksCluster",
            {"name": inputs["name"], "vpcConfig": {"clusterSecurityGroupId": EKS_SECURITY_GROUP}},
        ),
    },
    "awsx:ec2:Vpc": lambda mocks, name, inputs: mocks._vpc(inputs),
    "aws:iam/role:Role": lambda _m, name, inputs: {
        "arn": f"arn:aws:iam::123456789012:role/{name}",
        "name": name,
    },
    "aws:eks/nodeGroup:NodeGroup": lambda _m, name, inputs: {
        "nodeGroupName": f"{inputs['nodeGroupNamePrefix']}0001",
        "arn": f"arn:aws:eks:{REGION}:123456789012:nodegroup/{inputs['clusterName']}/{name}",
        "resources": [{"autoscalingGroups": [{"name": f"eks-{inputs['nodeGroupNamePrefix']}0001-asg"}]}],
    },
    "aws:sqs/queue:Queue": lambda _m, name, inputs: {
        "arn": f"arn:aws:sqs:{REGION}:123456789012:{inputs['name']}",
        "url": f"https://sqs.{REGION}.amazonaws.com/123456789012/{inputs['name']}",
    },
    "aws:cloudwatch/eventRule:EventRule": lambda _m, name, inputs: {
        "name": name,
        "arn": f"arn:aws:events:{REGION}:123456789012:rule/{name}",
    },
    "aws:ecr/repository:Repository": lambda mocks, name, inputs: mocks._repository(name, inputs),
    "tls:index/privateKey:PrivateKey": lambda _m, name, inputs: tls_provider.private_key(inputs),
    "tls:index/selfSignedCert:SelfSignedCert": lambda _m, name, inputs: tls_provider.self_signed_cert(inputs),
    "tls:index/certRequest:CertRequest": lambda _m, name, inputs: tls_provider.cert_request(inputs),
    "tls:index/locallySignedCert:LocallySignedCert": lambda _m, name, inputs: (
        tls_provider.locally_signed_cert(inputs)
    ),
    "docker-build:index:Image": lambda _m, name, inputs: {
        "digest": "sha256:" + hashlib.sha256(name.encode()).hexdigest(),
        "ref": inputs["tags"][0] + "@sha256:" + hashlib.sha256(name.encode()).hexdigest(),
    },
    "kubernetes:helm.sh/v3:Release": lambda _m, name, inputs: {"status": {"status": "deployed"}},
}


class RecordingMonitor(MockMonitor):
    """The mock engine, also keeping each resource's explicit and input dependencies."""

    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.dependencies: dict[str, tuple[str, ...]] = {}
        self.providers: dict[str, str] = {}
        self.property_dependencies: dict[str, frozenset[tuple[str, str, str]]] = {}
        self.ignore_changes: dict[str, tuple[str, ...]] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        self.dependencies[response.urn] = tuple(request.dependencies)
        # A provider reference is "<urn>::<id>"; keep the URN.
        self.providers[response.urn] = request.provider.rsplit("::", 1)[0] if request.provider else ""
        self.property_dependencies[response.urn] = frozenset(
            (key, *_type_and_name(urn))
            for key, dependencies in request.propertyDependencies.items()
            for urn in dependencies.urns
        )
        self.ignore_changes[response.urn] = tuple(request.ignoreChanges)
        return response


def _type_and_name(urn: str) -> tuple[str, str]:
    qualified_type, name = urn.split("::")[2:4]
    return qualified_type.split("$")[-1], name


def manifest(value: Any) -> Any:
    """A plain object as JSON should carry it: whole numbers as integers (the engine's
    protobuf numbers are floats; the Kubernetes provider sends 2.0 as 2)."""
    if isinstance(value, dict):
        return {key: manifest(item) for key, item in value.items()}
    if isinstance(value, list):
        return [manifest(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class StackRun:
    """What one run of the program declared and exported."""

    resources: list[Declared]
    outputs: dict[str, Any]
    secret_outputs: frozenset[str]
    calls: list[MockCallArgs]

    def of_type(self, type_: str) -> list[Declared]:
        return [resource for resource in self.resources if resource.type == type_]

    def one(self, type_: str, name: str | None = None) -> Declared:
        found = [r for r in self.of_type(type_) if name is None or r.name == name]
        assert len(found) == 1, f"expected one {type_} {name or ''}, found {[r.name for r in found]}"
        return found[0]

    def kubernetes_object(self, kind: str, name: str) -> dict[str, Any]:
        """The plain manifest of a declared Kubernetes object of ``kind`` named ``name``."""
        found = [
            r.plain
            for r in self.resources
            if r.type.startswith("kubernetes:")
            and r.plain.get("kind") == kind
            and r.plain["metadata"]["name"] == name
        ]
        assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
        return found[0]


def run_stack(program: Callable[[], Mapping[str, Any]], mocks: StackMocks | None = None) -> StackRun:
    """Run ``program`` (which declares resources and returns outputs) under fresh mocks.

    Call inside moto's ``mock_aws``. Raises whatever the program or a resource raised; ``mocks``,
    if given, then still holds what was registered before.
    """
    mocks = mocks or StackMocks()
    monitor = RecordingMonitor(mocks)
    mocks.monitor = monitor
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=STACK, preview=False, monitor=monitor)
    resolved: dict[str, Any] = {}
    secret: set[str] = set()

    async def collect(outputs: Mapping[str, Any]) -> None:
        for name, value in outputs.items():
            output = pulumi.Output.from_input(value)
            resolved[name] = await output.future()
            if await output.is_secret():
                secret.add(name)

    def declare() -> pulumi.Output[None]:
        return pulumi.Output.from_input(asyncio.ensure_future(collect(program())))

    pulumi.runtime.test(declare)()
    declared = []
    for urn in monitor.get_registered_resources():
        if urn in mocks.children:
            continue
        qualified_type, name = urn.split("::")[2:4]
        *parents, type_ = qualified_type.split("$")
        args = mocks.registered[(type_, name)]
        dependencies = frozenset(
            _type_and_name(dependency) for dependency in monitor.dependencies.get(urn, ())
        )
        declared.append(
            Declared(
                type_,
                name,
                args.inputs,
                tuple(parents),
                bool(args.custom),
                dependencies,
                monitor.providers.get(urn, ""),
                monitor.property_dependencies.get(urn, frozenset()),
                monitor.ignore_changes.get(urn, ()),
            )
        )
    return StackRun(declared, resolved, frozenset(secret), mocks.calls)
