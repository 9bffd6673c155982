"""``images``: the ECR repositories (on EKS), or the prebuilt images to run (existing cluster)."""

from dataclasses import dataclass

from components.stack_config.validation import IMAGE_REFERENCE, Value

MAX_KEEP_IMAGES = 1000


@dataclass(frozen=True)
class ImageSettings:
    """The ECR repositories (on EKS), or the images to run (on an existing cluster)."""

    keep_images: int = 10
    force_delete: bool = False
    extender: str | None = None
    """Reference of a prebuilt extender image (existing cluster only; EKS stacks build it)."""
    gpu_scheduler: str | None = None
    """Reference of a prebuilt gpu-scheduler image (existing cluster only)."""


ECR_IMAGE_KEYS = ("keepImages", "forceDelete")
"""``images`` keys for the ECR repositories of an EKS stack."""
IMAGE_REFERENCE_KEYS = {"extender": "scheduler-extender", "gpuScheduler": "gpu-scheduler"}
"""``images`` keys naming prebuilt images (existing cluster), and the image each names."""


def parse_images(value: Value) -> ImageSettings:
    fields = value.fields({*ECR_IMAGE_KEYS, *IMAGE_REFERENCE_KEYS})
    default = ImageSettings()

    def reference(key: str) -> str | None:
        example = f"registry.example.com/{IMAGE_REFERENCE_KEYS[key]}:v1"
        return fields.read(
            key, None, lambda v: v.string(IMAGE_REFERENCE, f"an image reference such as {example}")
        )

    return ImageSettings(
        keep_images=fields.read("keepImages", default.keep_images, lambda v: v.integer(1, MAX_KEEP_IMAGES)),
        force_delete=fields.read("forceDelete", default.force_delete, Value.boolean),
        extender=reference("extender"),
        gpu_scheduler=reference("gpuScheduler"),
    )
