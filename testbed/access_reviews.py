"""What the real API server's authorizer says a user may do: SubjectAccessReviews for the RBAC tests."""

from typing import NamedTuple

import kubernetes

AUTHENTICATED = "system:authenticated"
"""The group the API server adds to every authenticated request (a SubjectAccessReview does not)."""


class Access(NamedTuple):
    """One request as the authorizer sees it."""

    verb: str
    resource: str
    namespace: str = ""
    """Empty: cluster-wide (all namespaces, or a cluster-scoped resource)."""
    name: str = ""
    group: str = ""
    subresource: str = ""


def allowed(
    api: kubernetes.client.AuthorizationV1Api, user: str, groups: tuple[str, ...], access: Access
) -> bool:
    """The authorizer's answer for ``user`` in ``groups`` (and AUTHENTICATED) asking for ``access``."""
    attributes = {"verb": access.verb, "resource": access.resource, "group": access.group}
    for key, value in (("namespace", access.namespace), ("name", access.name)):
        if value:
            attributes[key] = value
    if access.subresource:
        attributes["subresource"] = access.subresource
    review = api.create_subject_access_review(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": [*groups, AUTHENTICATED], "resourceAttributes": attributes},
        }
    )
    return bool(review.status.allowed)
