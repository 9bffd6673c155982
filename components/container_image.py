"""An ECR repository and, when the scheduler mode needs it, the image built and pushed to it.

Each build is tagged with a hash of what the builder compares (content_tag: sources with their
permission bits, Dockerfile, platform): a change makes a new tag; unchanged inputs keep the tag
and nothing is rebuilt or rolled. Deployments use ``image_ref`` (``repository:tag@sha256:...``),
so a node always runs the exact bytes that were pushed, whatever the tag points at later.

The tags are MUTABLE, and the digest is the pin. An IMMUTABLE repository cannot take the same
tag twice, and a push is not atomic with Pulumi's state: when ``pulumi up`` is interrupted after
the push but before the state is saved, the next ``up`` builds again, and a rebuild is not byte
for byte the same image (layer timestamps, provenance), so ECR would refuse it with
ImageTagAlreadyExistsException until someone deleted the image by hand
(docs/deploy-eks.md#image-tags-and-digests).
"""

import json

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from components.stack_config import ImageSettings
from render.image_sources import IMAGE_PLATFORM, ImageSource, image_tag

PLATFORM = docker_build.Platform(IMAGE_PLATFORM)
"""The node groups run x86_64 AMIs (``render/image_sources.py`` names the platform once)."""
TAG_MUTABILITY = "MUTABLE"
"""A rerun after an interrupted push may push the tag again; what runs is pinned by digest."""


def lifecycle_policy(keep_images: int) -> str:
    """ECR lifecycle policy: expire all but the newest ``keep_images`` images."""
    return json.dumps(
        {
            "rules": [
                {
                    "rulePriority": 1,
                    "description": f"keep the newest {keep_images} images",
                    "selection": {
                        "tagStatus": "any",
                        "countType": "imageCountMoreThan",
                        "countNumber": keep_images,
                    },
                    "action": {"type": "expire"},
                }
            ]
        }
    )


class ContainerImage(pulumi.ComponentResource):
    """ECR repository (mutable tags, digest pins, scan on push, lifecycle policy) and an optional build.

    The repository is ``<namespace>/<image>`` (namespace: the cluster name), so stacks in one
    account and region do not collide.
    """

    repository: aws.ecr.Repository
    tag: str | None
    """The source-hash tag, when this stack builds the image."""

    def __init__(
        self,
        name: str,
        source: ImageSource,
        settings: ImageSettings,
        *,
        namespace: str,
        build: bool,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpu-scheduler-eks:index:ContainerImage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.repository = aws.ecr.Repository(
            f"{name}-repository",
            name=f"{namespace}/{source.repository}",
            image_tag_mutability=TAG_MUTABILITY,
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(scan_on_push=True),
            force_delete=settings.force_delete,
            opts=child,
        )
        aws.ecr.LifecyclePolicy(
            f"{name}-lifecycle",
            repository=self.repository.name,
            policy=lifecycle_policy(settings.keep_images),
            opts=child,
        )
        self.tag = None
        self._image_ref: pulumi.Output[str] | None = None
        if build:
            tag = self.tag = image_tag(source)
            token = aws.ecr.get_authorization_token_output(
                registry_id=self.repository.registry_id, opts=pulumi.InvokeOutputOptions(parent=self)
            )
            image = docker_build.Image(
                f"{name}-image",
                context=docker_build.BuildContextArgs(location=source.context),
                dockerfile=docker_build.DockerfileArgs(location=source.dockerfile),
                platforms=[PLATFORM],
                tags=[self.repository.repository_url.apply(lambda url: f"{url}:{tag}")],
                push=True,
                build_on_preview=False,
                registries=[
                    docker_build.RegistryArgs(
                        address=self.repository.repository_url,
                        username=token.user_name,
                        password=pulumi.Output.secret(token.password),
                    )
                ],
                opts=child,
            )
            self._image_ref = image.ref
        self.register_outputs(
            {"repositoryUrl": self.repository.repository_url, "tag": self.tag, "imageRef": self._image_ref}
        )

    @property
    def image_ref(self) -> pulumi.Output[str]:
        """``repository:tag@sha256:...`` of the pushed image; only for an image this stack builds."""
        if self._image_ref is None:
            raise ValueError(f"image {self._name} is not built in this scheduler mode")
        return self._image_ref
