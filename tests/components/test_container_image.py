"""The images under mocks: the ECR repositories and their settings, the build from sources with
the content tag, ECR credentials as a secret, the Deployments on the pushed digest, and a
rerun pushing its tag again into the repository the program made in moto's ECR."""

import json

import boto3
from moto import mock_aws

from components.stack import build_stack
from contracts.cluster import EXTENDER_SERVICE, SCHEDULER_NAME
from contracts.modes import uses_extender
from contracts.release import REPO_ROOT
from render.content_tag import content_tag
from render.image_sources import EXTENDER_IMAGE, GPU_SCHEDULER_IMAGE
from tests.components.conftest import run_with, stack_config
from tests.components.mocks import REGION, StackRun, is_secret, moto_registry_credentials, run_stack
from tests.components.pod_specs import containers


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
    assert version == content_tag(REPO_ROOT, source.sources, build_inputs=(source.dockerfile, "linux/amd64"))
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
