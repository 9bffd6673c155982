"""The custom scheduler's own least-privilege roles, rendered as data.

A pure module (no Pulumi import): the Pulumi program declares these roles for the scheduler's
ServiceAccount, and the local cluster grants the same rules to the identity it runs the
scheduler as, so the end-to-end suites schedule with exactly these rights.

Not the built-in ``system:kube-scheduler``: that role may create any Lease and read and renew
the default scheduler's Lease ``kube-system/kube-scheduler``, so a second scheduler bound to it
could take the default scheduler's leadership away. The rules below are what kube-scheduler 1.35
reads and writes (its upstream bootstrap role ``system:kube-scheduler`` plus
``system:volume-scheduler``, read from ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``),
minus the Leases, which a namespaced Role grants on ``scheduler-lab`` alone, and minus what only
alpha feature gates use (LeaseCandidates for coordinated leader election, Workloads, DRA device
taint rules and extended-resource claims). Our plugins (GPUScheduler, CapacityType, JobZone) read
Nodes and Pods through the scheduler's informers and write nothing; the extender modes' extender
calls need no Kubernetes rights of the scheduler's.
"""

from typing import Any

from contracts.cluster import NAMESPACE, SCHEDULER_NAME, SYSTEM_NAMESPACE

SCHEDULER_ROLE = SCHEDULER_NAME
"""ClusterRole (and ClusterRoleBinding) name: what the scheduler reads and writes cluster-wide."""
LEADER_ELECTION_ROLE = f"{SCHEDULER_NAME}-leader-election"
"""Role (and RoleBinding) in NAMESPACE: its own Lease."""
AUTHENTICATION_READER_ROLE = "extension-apiserver-authentication-reader"
"""Built-in Role in kube-system: get the ``extension-apiserver-authentication`` ConfigMap, which
the scheduler's secure port reads for delegated authentication."""
AUTHENTICATION_READER_BINDING = f"{SCHEDULER_NAME}-{AUTHENTICATION_READER_ROLE}"
COORDINATION_GROUP = "coordination.k8s.io"
READ = ("get", "list", "watch")
READ_UPDATE = ("get", "list", "watch", "update", "patch")


def _rule(groups: tuple[str, ...], resources: tuple[str, ...], verbs: tuple[str, ...]) -> dict[str, Any]:
    return {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}


SCHEDULER_RULES: tuple[dict[str, Any], ...] = (
    # Scheduling events (FailedScheduling, Scheduled, Preempted) in the pods' namespaces.
    _rule(("", "events.k8s.io"), ("events",), ("create", "patch", "update")),
    # The cluster it schedules onto, and the pods it places; delete is preemption's eviction.
    _rule(("",), ("nodes",), READ),
    _rule(("",), ("pods",), (*READ, "delete")),
    _rule(("",), ("bindings", "pods/binding"), ("create",)),
    _rule(("",), ("pods/status",), ("patch", "update")),
    # PodTopologySpread's default constraints select by the pod's Service and owner.
    _rule(("",), ("services", "replicationcontrollers"), READ),
    _rule(("apps",), ("replicasets", "statefulsets"), READ),
    # JobZone reads an Indexed Job's size (spec.completions) from the Job that made the pod.
    _rule(("batch",), ("jobs",), READ),
    # Preemption respects disruption budgets; affinity may select namespaces by label.
    _rule(("policy",), ("poddisruptionbudgets",), READ),
    _rule(("",), ("namespaces",), READ),
    # Volume binding (system:volume-scheduler) and volume limits.
    _rule(("",), ("persistentvolumes", "persistentvolumeclaims"), READ_UPDATE),
    _rule(("storage.k8s.io",), ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities"), READ),
    _rule(("storage.k8s.io",), ("volumeattachments",), READ),
    # Dynamic resource allocation (GA and on in 1.35): the DRA plugin's informers and its writes.
    _rule(("resource.k8s.io",), ("deviceclasses", "resourceslices"), READ),
    _rule(("resource.k8s.io",), ("resourceclaims", "resourceclaims/status"), READ_UPDATE),
    _rule(("",), ("pods/finalizers",), ("update",)),
    # The secure port's delegated authentication and authorization (non-mutating creates).
    _rule(("authentication.k8s.io",), ("tokenreviews",), ("create",)),
    _rule(("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
)
"""The ClusterRole's rules. No Secrets, no ConfigMaps, no Leases, nothing it does not read or write."""

LEADER_ELECTION_RULES: tuple[dict[str, Any], ...] = (
    # Create cannot be limited by name (the object does not exist yet); the Role limits it to NAMESPACE.
    {"apiGroups": [COORDINATION_GROUP], "resources": ["leases"], "verbs": ["create"]},
    {
        "apiGroups": [COORDINATION_GROUP],
        "resources": ["leases"],
        "resourceNames": [SCHEDULER_NAME],
        "verbs": ["get", "update"],
    },
)
"""The Role's rules in NAMESPACE: its own Lease ``custom-scheduler`` (leaderElection's resourceName)."""


def scheduler_rbac_manifests(subject: dict[str, str]) -> list[dict[str, Any]]:
    """Every RBAC object the scheduler needs, bound to ``subject`` (a ServiceAccount in the cluster,
    a User locally): the ClusterRole and its binding, the Lease Role and its binding in NAMESPACE,
    and the binding to the built-in authentication reader in kube-system."""
    rbac = "rbac.authorization.k8s.io/v1"

    def ref(kind: str, name: str) -> dict[str, str]:
        return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}

    return [
        {
            "apiVersion": rbac,
            "kind": "ClusterRole",
            "metadata": {"name": SCHEDULER_ROLE},
            "rules": list(SCHEDULER_RULES),
        },
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": SCHEDULER_ROLE},
            "roleRef": ref("ClusterRole", SCHEDULER_ROLE),
            "subjects": [subject],
        },
        {
            "apiVersion": rbac,
            "kind": "Role",
            "metadata": {"name": LEADER_ELECTION_ROLE, "namespace": NAMESPACE},
            "rules": list(LEADER_ELECTION_RULES),
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": LEADER_ELECTION_ROLE, "namespace": NAMESPACE},
            "roleRef": ref("Role", LEADER_ELECTION_ROLE),
            "subjects": [subject],
        },
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": AUTHENTICATION_READER_BINDING, "namespace": SYSTEM_NAMESPACE},
            "roleRef": ref("Role", AUTHENTICATION_READER_ROLE),
            "subjects": [subject],
        },
    ]
