"""The admission webhook's objects under the mocks: in every mode, hardened like the extender,
registered with the stack's CA, and shaped by its stack settings."""

import base64
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from components.certificates import Certificates
from components.stack_config import CertificateSettings, StackConfigError, WebhookSettings
from components.webhook import AdmissionWebhook, AdmissionWebhookArgs
from contracts.cluster import EXTENDER_SERVICE, NAMESPACE, WEBHOOK_SERVICE
from contracts.server import (
    HEALTH_PORT,
    MUTATE_PATH,
    ROLE_WEBHOOK,
    TLS_PORT,
    WEBHOOK_TLS_DIR,
)
from extender_app.cli import settings_from
from extender_app.settings import WEBHOOK_MAX_BODY_BYTES
from policy import CAPACITY_TYPE_ANNOTATION, MIN_MEMORY_ANNOTATION
from policy.job_zone import JOB_SIZE_ANNOTATION, ZONE_POLICY_ANNOTATION
from render.policy_choices import JobZoneArgs, PolicyChoices
from render.webhook_config import (
    WEBHOOK_NAME,
    WEBHOOK_SERVICE_HOST,
    WEBHOOK_SERVICE_PORT,
    WEBHOOK_TLS_SECRET,
    webhook_args,
)
from tests.components.conftest import run_with, stack_config
from tests.components.mocks import StackRun, run_stack
from tests.components.pod_specs import containers

CONFIGURATION = "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"


def the_webhook(run: StackRun) -> dict[str, Any]:
    [configuration] = [resource.plain for resource in run.of_type(CONFIGURATION)]
    assert configuration["metadata"]["name"] == WEBHOOK_SERVICE
    [webhook] = configuration["webhooks"]
    return dict(webhook)


def test_every_mode_registers_the_webhook_for_annotated_pod_creates(run: StackRun) -> None:
    webhook = the_webhook(run)
    assert webhook["name"] == WEBHOOK_NAME
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["rules"] == [
        {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "scope": "Namespaced",
        }
    ]
    [condition] = webhook["matchConditions"]
    assert condition["expression"] == (
        f'has(object.metadata.annotations) && ("{MIN_MEMORY_ANNOTATION}" in object.metadata.annotations'
        f' || "{CAPACITY_TYPE_ANNOTATION}" in object.metadata.annotations'
        f' || "{ZONE_POLICY_ANNOTATION}" in object.metadata.annotations'
        f' || "{JOB_SIZE_ANNOTATION}" in object.metadata.annotations)'
    )
    assert webhook["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ]
    }
    assert (webhook["sideEffects"], webhook["reinvocationPolicy"]) == ("None", "IfNeeded")
    assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Fail", 5)
    client = webhook["clientConfig"]
    assert client["service"] == {
        "name": WEBHOOK_SERVICE,
        "namespace": NAMESPACE,
        "path": MUTATE_PATH,
        "port": WEBHOOK_SERVICE_PORT,
    }
    assert base64.b64decode(client["caBundle"]).decode() == run.outputs["caCertPem"]


def test_the_configuration_waits_for_the_webhook_to_serve(run: StackRun) -> None:
    configuration = run.one(CONFIGURATION)
    assert ("kubernetes:apps/v1:Deployment", "webhook-deployment") in configuration.depends_on
    assert ("kubernetes:core/v1:Service", "webhook-service") in configuration.depends_on


def test_the_certificate_names_the_host_the_api_server_dials(extender_run: StackRun) -> None:
    request = extender_run.one("tls:index/certRequest:CertRequest", "extender-tls-webhook-request").plain
    assert request["dnsNames"] == [WEBHOOK_SERVICE_HOST] == [f"{WEBHOOK_SERVICE}.{NAMESPACE}.svc"]
    leaf = extender_run.one("tls:index/locallySignedCert:LocallySignedCert", "extender-tls-webhook").plain
    assert leaf["allowedUses"] == ["digital_signature", "server_auth"]
    assert leaf["caCertPem"] == extender_run.outputs["caCertPem"]
    secret = extender_run.kubernetes_object("Secret", WEBHOOK_TLS_SECRET)
    assert sorted(secret["stringData"]) == ["tls.crt", "tls.key"]


def test_the_deployment_is_hardened_like_the_extender(extender_run: StackRun) -> None:
    webhook = extender_run.kubernetes_object("Deployment", WEBHOOK_SERVICE)
    extender = extender_run.kubernetes_object("Deployment", EXTENDER_SERVICE)
    pod, extender_pod = webhook["spec"]["template"]["spec"], extender["spec"]["template"]["spec"]
    assert webhook["spec"]["replicas"] == 2
    for shared in ("securityContext", "nodeSelector", "enableServiceLinks"):
        assert pod[shared] == extender_pod[shared], shared
    assert pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == WEBHOOK_SERVICE
    assert [c["topologyKey"] for c in pod["topologySpreadConstraints"]] == [
        c["topologyKey"] for c in extender_pod["topologySpreadConstraints"]
    ]
    [container], [extender_container] = pod["containers"], extender_pod["containers"]
    assert container["image"] == extender_container["image"], "the same image in another role"
    assert container["securityContext"] == extender_container["securityContext"]
    assert container["args"] == webhook_args()
    assert container["volumeMounts"] == [{"name": "tls", "mountPath": WEBHOOK_TLS_DIR, "readOnly": True}]
    assert pod["volumes"][0]["secret"]["secretName"] == WEBHOOK_TLS_SECRET
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "https": TLS_PORT,
        "health": HEALTH_PORT,
    }


def test_the_webhook_serves_the_stacks_scheduler_mode(run: StackRun) -> None:
    """In plugin mode JobZone keeps a same-zone job together, so the webhook writes no zone term
    beside a member's own required pod affinity; in the extender modes it refuses such a member."""
    deployment = run.kubernetes_object("Deployment", WEBHOOK_SERVICE)
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert settings_from(container["args"], {}).scheduler_mode == run.outputs["schedulerMode"]


def test_the_flags_are_ones_the_program_accepts_in_its_webhook_role() -> None:
    settings = settings_from(
        webhook_args("warn", choices=PolicyChoices(job_zone=JobZoneArgs(max_job_size=64))), {}
    )
    assert settings.role == ROLE_WEBHOOK
    assert settings.max_job_size == 64
    assert (settings.tls_cert, settings.tls_key) == (
        f"{WEBHOOK_TLS_DIR}/tls.crt",
        f"{WEBHOOK_TLS_DIR}/tls.key",
    )
    assert settings.client_ca == "", "kube-apiserver presents no client certificate by default"
    assert (settings.port, settings.health_port) == (TLS_PORT, HEALTH_PORT)
    assert settings.invalid_annotation == "warn"
    assert settings.disruption_protection == "on", "on by default: annotated jobs keep their node"
    assert settings_from(webhook_args(disruption_protection=False), {}).disruption_protection == "off"
    assert settings.scheduler_mode == "extender", "the affinity is the only zone rule unless told otherwise"
    assert settings_from(webhook_args(mode="plugin"), {}).scheduler_mode == "plugin"
    assert settings.max_body_bytes == WEBHOOK_MAX_BODY_BYTES


def test_pdb_service_and_network_policy(run: StackRun) -> None:
    selector = run.kubernetes_object("Deployment", WEBHOOK_SERVICE)["spec"]["selector"]
    assert run.kubernetes_object("PodDisruptionBudget", WEBHOOK_SERVICE)["spec"] == {
        "minAvailable": 1,
        "selector": selector,
    }
    service = run.kubernetes_object("Service", WEBHOOK_SERVICE)["spec"]
    assert service["selector"] == selector["matchLabels"]
    assert service["ports"] == [
        {"name": "https", "port": WEBHOOK_SERVICE_PORT, "targetPort": "https", "protocol": "TCP"}
    ]
    policy = run.kubernetes_object("NetworkPolicy", WEBHOOK_SERVICE)["spec"]
    assert policy["podSelector"] == selector
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    assert policy.get("egress", []) == []
    assert policy["ingress"] == [{"ports": [{"protocol": "TCP", "port": TLS_PORT}]}]


def test_the_settings_reach_the_objects() -> None:
    run = run_with(
        {
            "schedulerMode": "plugin",
            "webhook": {
                "replicas": 3,
                "failurePolicy": "Ignore",
                "timeoutSeconds": 2,
                "invalidAnnotation": "warn",
                "disruptionProtection": False,
                "allowedSourceCidrs": ["10.0.0.0/16", "192.168.4.0/24"],
                "resources": {"limits": {"memory": "128Mi"}},
                "maxConnectionsPerSource": 128,
                "maxNodeSelectorTerms": 200,
                "maxNodeSelectorBytes": 65536,
            },
        }
    )
    webhook = the_webhook(run)
    assert (webhook["failurePolicy"], webhook["timeoutSeconds"]) == ("Ignore", 2)
    deployment = run.kubernetes_object("Deployment", WEBHOOK_SERVICE)
    assert deployment["spec"]["replicas"] == 3
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "--invalid-annotation=warn" in container["args"]
    assert "--disruption-protection=off" in container["args"]
    assert settings_from(container["args"], {}).max_connections_per_source == 128
    assert settings_from(container["args"], {}).max_node_selector_terms == 200
    assert settings_from(container["args"], {}).max_node_selector_bytes == 65536
    assert container["resources"]["limits"] == {"memory": "128Mi"}
    [rule] = run.kubernetes_object("NetworkPolicy", WEBHOOK_SERVICE)["spec"]["ingress"]
    assert rule["from"] == [{"ipBlock": {"cidr": "10.0.0.0/16"}}, {"ipBlock": {"cidr": "192.168.4.0/24"}}]


def test_disabled_declares_nothing_of_the_webhook() -> None:
    run = run_with({"webhook": {"enabled": False}})
    assert not run.of_type(CONFIGURATION)
    assert not [r for r in run.resources if WEBHOOK_SERVICE in str(r.plain.get("metadata", {}).get("name"))]
    assert not [r for r in run.resources if r.name.startswith("extender-tls-webhook")]


def test_the_defaults() -> None:
    assert stack_config({}).webhook == WebhookSettings()
    assert WebhookSettings().failure_policy == "Fail"


@pytest.mark.parametrize(
    ("webhook", "key", "problem"),
    [
        ({"failurePolicy": "Open"}, "webhook.failurePolicy", "must be one of Fail, Ignore"),
        ({"timeoutSeconds": 0}, "webhook.timeoutSeconds", "must be 1..30"),
        ({"timeoutSeconds": 31}, "webhook.timeoutSeconds", "must be 1..30"),
        ({"invalidAnnotation": "ignore"}, "webhook.invalidAnnotation", "must be one of deny, warn"),
        ({"replicas": 1}, "webhook.replicas", "must be 2..20"),
        ({"allowedSourceCidrs": ["10.0.0.0/33"]}, "webhook.allowedSourceCidrs[0]", "is not a CIDR block"),
        ({"enabled": "yes"}, "webhook.enabled", "must be true or false"),
        ({"disruptionProtection": "on"}, "webhook.disruptionProtection", "must be true or false"),
        ({"maxConnectionsPerSource": 0}, "webhook.maxConnectionsPerSource", "must be 1..256"),
        ({"maxConnectionsPerSource": 257}, "webhook.maxConnectionsPerSource", "must be 1..256"),
        ({"maxNodeSelectorTerms": 0}, "webhook.maxNodeSelectorTerms", "must be 1..10000"),
        ({"maxNodeSelectorBytes": 0}, "webhook.maxNodeSelectorBytes", "must be 1..16777216"),
        ({"port": 443}, "webhook", "unknown key 'port'"),
    ],
)
def test_bad_settings_fail_naming_the_key(webhook: dict[str, object], key: str, problem: str) -> None:
    with pytest.raises(StackConfigError) as raised:
        stack_config({"webhook": webhook})
    message = str(raised.value)
    assert message.startswith(f"gpu-scheduler-eks:{key}: "), message
    assert problem in message, message


def test_the_component_is_made_from_its_args_alone() -> None:
    """Every input arrives through ``AdmissionWebhookArgs``: the image, the settings and choices as
    flags, the annotations on every object, the node selector, the provider and what the objects wait for."""
    annotations = {"example.com/owner": "platform"}
    settings = WebhookSettings(max_node_selector_terms=7)
    choices = PolicyChoices(default_capacity_type="on-demand")

    def program() -> dict[str, Any]:
        provider = k8s.Provider("cluster")
        namespace = k8s.core.v1.Namespace("waited-for")
        certificates = Certificates(
            "tls", CertificateSettings(), provider, namespace, extender=False, webhook=True
        )
        AdmissionWebhook(
            "webhook",
            AdmissionWebhookArgs(
                settings=settings,
                image="registry.example.com/extender:v1",
                certificates=certificates,
                provider=provider,
                depends_on=(namespace,),
                object_annotations=annotations,
                choices=choices,
                mode="plugin",
                node_selector={"pool": "system"},
            ),
        )
        return {}

    run = run_stack(program)
    deployment = run.kubernetes_object("Deployment", WEBHOOK_SERVICE)
    [container] = containers(deployment)
    assert container["image"] == "registry.example.com/extender:v1"
    assert container["args"] == webhook_args(
        settings.invalid_annotation,
        settings.disruption_protection,
        choices,
        max_connections_per_source=settings.max_connections_per_source,
        mode="plugin",
        max_node_selector_terms=7,
        max_node_selector_bytes=settings.max_node_selector_bytes,
    )
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "system"}
    webhook_objects = [
        resource for resource in run.resources if "AdmissionWebhook" in "".join(resource.parents)
    ]
    assert {resource.plain["kind"] for resource in webhook_objects} >= {
        "Deployment",
        "Service",
        "NetworkPolicy",
        "MutatingWebhookConfiguration",
    }
    for resource in webhook_objects:
        assert resource.plain["metadata"]["annotations"] == annotations, resource.name
        assert ("kubernetes:core/v1:Namespace", "waited-for") in resource.depends_on, resource.name
        assert resource.provider.endswith("::cluster"), resource.name
