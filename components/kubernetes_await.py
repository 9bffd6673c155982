"""What pulumi-kubernetes waits for, and how a stack on a cluster without controllers turns it off.

pulumi-kubernetes waits after it applies an object: for a Deployment to roll out, for a
Service to get endpoints, and on delete for the object to be gone. Its deletes are
foreground cascading by default, so the API server adds the ``foregroundDeletion`` finalizer,
which only the garbage collector (kube-controller-manager) removes; a Namespace is gone only
once the namespace controller has emptied it. On a cluster without nodes or controllers (a
bare API server, as in the end-to-end suite) each of those waits would run into its timeout.

``existingCluster.skipAwait`` puts two documented pulumi-kubernetes annotations on every
object: ``pulumi.com/skipAwait`` (no readiness waits; for Deployment and Namespace also no
deletion wait) and ``pulumi.com/deletionPropagationPolicy: background`` (the API server
deletes the object at once and leaves its dependents to the garbage collector). A pure
module (no Pulumi import).
"""

SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"
DELETION_PROPAGATION_ANNOTATION = "pulumi.com/deletionPropagationPolicy"
BACKGROUND_DELETION = "background"


def await_annotations(skip_await: bool) -> dict[str, str] | None:
    """The annotations for every object the stack declares; None when pulumi should wait."""
    if not skip_await:
        return None
    return {SKIP_AWAIT_ANNOTATION: "true", DELETION_PROPAGATION_ANNOTATION: BACKGROUND_DELETION}
