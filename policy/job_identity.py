"""Which job a pod belongs to: our own label, or the labels a job controller writes on its pods.

Users submit training as an Indexed Job, a JobSet, a Kubeflow job or a LeaderWorkerSet; the
controller labels every pod it creates with the name of what made it. The first source present
decides (a label with an empty value counts as absent):

1. our job label (``training.example.com/job``, a setting): the user's own word wins;
2. ``scheduling.x-k8s.io/pod-group`` (scheduler-plugins' Coscheduling PodGroup, a setting);
3. ``jobset.sigs.k8s.io/jobset-name``: one job per JobSet (a Kubeflow Trainer v2 TrainJob runs
   as the JobSet of the same name);
4. ``training.kubeflow.org/job-name``, with ``training.kubeflow.org/operator-name`` where set
   (training-operator v1 and mpi-operator, whose controllers select their pods by both);
5. ``leaderworkerset.sigs.k8s.io/name`` with ``leaderworkerset.sigs.k8s.io/group-index``: one
   job per group of a LeaderWorkerSet;
6. ``batch.kubernetes.io/job-name`` (or the older ``job-name``), only on a pod of an Indexed Job
   (``batch.kubernetes.io/job-completion-index`` as an annotation or a label), with the Job's
   ``batch.kubernetes.io/controller-uid`` where the Job controller wrote it: a Job deleted and
   created again under its name is another job, and the old Job's pods, still terminating, are
   not its members.

A job is its namespace and its name. Our label's value is the name as it is; a derived name is
the source and the label value(s) joined by ``/``, a character no label value can hold, so no two
sources ever name the same job. The labels that identify the job (``match_labels``, with their
raw values) are what a label selector for its pods selects by.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from policy.errors import PolicyError

JobSource = Literal["job-label", "pod-group", "jobset", "kubeflow", "leaderworkerset", "indexed-job"]
"""Where a pod's job came from, in the order the sources are tried."""
JOB_SOURCES: tuple[JobSource, ...] = (
    "job-label",
    "pod-group",
    "jobset",
    "kubeflow",
    "leaderworkerset",
    "indexed-job",
)

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
"""JobSet (kubernetes-sigs/jobset) pod label: the JobSet's name."""
KUBEFLOW_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
"""Kubeflow training-operator v1 and mpi-operator pod label: the training job's name."""
KUBEFLOW_OPERATOR_LABEL = "training.kubeflow.org/operator-name"
"""Kubeflow pod label: the controller that made the pod (``pytorchjob-controller``, ``mpi-operator``)."""
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
"""LeaderWorkerSet pod label: the LeaderWorkerSet's name."""
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
"""LeaderWorkerSet pod label: the index of the pod's group (leader and its workers)."""
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
"""LeaderWorkerSet pod annotation: the number of pods in a group."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Kubernetes Job pod label: the Job's name."""
LEGACY_JOB_NAME_LABEL = "job-name"
"""The unprefixed Job name label Kubernetes still writes beside JOB_NAME_LABEL."""
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""Indexed Job pod annotation and label: the pod's completion index."""
JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
"""Job pod label: the uid of the Job that made the pod (unless the Job sets its own selector)."""

SOURCE_OWNER: Mapping[JobSource, str] = {
    "pod-group": "a PodGroup",
    "jobset": "a JobSet",
    "kubeflow": "a Kubeflow training job",
    "leaderworkerset": "a LeaderWorkerSet group",
    "indexed-job": "an Indexed Job",
}
"""What made the pods of each source, as a message names it."""

LWS_WITHOUT_GROUP_INDEX = (
    f"a LeaderWorkerSet pod needs the label {LWS_GROUP_INDEX_LABEL}, which LeaderWorkerSet's own webhook sets"
)
"""A pod with the LeaderWorkerSet name label but no group index (not yet seen by LWS's webhook)."""
JOB_NOT_INDEXED = (
    f"the pod is from a Job that is not Indexed (no {JOB_COMPLETION_INDEX}): only an Indexed Job's pods"
    " form a same-zone job"
)
"""A pod with only a Job's name label, from a Job whose completion mode is not Indexed."""


@dataclass(frozen=True)
class JobIdentity:
    """The job a pod belongs to, within the pod's namespace."""

    name: str
    """The job's name: unique within the namespace across every source."""
    source: JobSource
    name_label: str
    """The label whose value names the job (LeaderWorkerSet: the name label, beside the group index)."""
    match_labels: tuple[tuple[str, str], ...]
    """The labels, sorted by key, that every pod of the job carries with these values."""


def job_identity(
    labels: Mapping[str, str], annotations: Mapping[str, str], job_label: str, pod_group_label: str
) -> JobIdentity | None:
    """The job the pod with these labels and annotations belongs to; None when no source names one.

    Raises PolicyError with ``LWS_WITHOUT_GROUP_INDEX`` for a LeaderWorkerSet pod without its group
    index, when no earlier source decides.
    """
    if value := labels.get(job_label):
        return JobIdentity(value, "job-label", job_label, ((job_label, value),))
    if value := labels.get(pod_group_label):
        return JobIdentity(f"pod-group/{value}", "pod-group", pod_group_label, ((pod_group_label, value),))
    for read in (_jobset, _kubeflow, _leaderworkerset, _indexed_job):
        if identity := read(labels, annotations):
            return identity
    return None


def _jobset(labels: Mapping[str, str], _: Mapping[str, str]) -> JobIdentity | None:
    if value := labels.get(JOBSET_NAME_LABEL):
        return JobIdentity(f"jobset/{value}", "jobset", JOBSET_NAME_LABEL, ((JOBSET_NAME_LABEL, value),))
    return None


def _kubeflow(labels: Mapping[str, str], _: Mapping[str, str]) -> JobIdentity | None:
    job = labels.get(KUBEFLOW_JOB_NAME_LABEL)
    if not job:
        return None
    operator = labels.get(KUBEFLOW_OPERATOR_LABEL)
    if not operator:
        return JobIdentity(
            f"kubeflow/{job}", "kubeflow", KUBEFLOW_JOB_NAME_LABEL, ((KUBEFLOW_JOB_NAME_LABEL, job),)
        )
    pairs = ((KUBEFLOW_JOB_NAME_LABEL, job), (KUBEFLOW_OPERATOR_LABEL, operator))
    return JobIdentity(f"kubeflow/{operator}/{job}", "kubeflow", KUBEFLOW_JOB_NAME_LABEL, pairs)


def _leaderworkerset(labels: Mapping[str, str], _: Mapping[str, str]) -> JobIdentity | None:
    name = labels.get(LWS_NAME_LABEL)
    if not name:
        return None
    group = labels.get(LWS_GROUP_INDEX_LABEL)
    if not group:
        raise PolicyError(LWS_WITHOUT_GROUP_INDEX)
    pairs = ((LWS_GROUP_INDEX_LABEL, group), (LWS_NAME_LABEL, name))
    return JobIdentity(f"leaderworkerset/{name}/{group}", "leaderworkerset", LWS_NAME_LABEL, pairs)


def _indexed_job(labels: Mapping[str, str], annotations: Mapping[str, str]) -> JobIdentity | None:
    if not (annotations.get(JOB_COMPLETION_INDEX) or labels.get(JOB_COMPLETION_INDEX)):
        return None
    for key in (JOB_NAME_LABEL, LEGACY_JOB_NAME_LABEL):
        if value := labels.get(key):
            if uid := labels.get(JOB_CONTROLLER_UID_LABEL):
                pairs = tuple(sorted(((key, value), (JOB_CONTROLLER_UID_LABEL, uid))))
                return JobIdentity(f"indexed-job/{value}/{uid}", "indexed-job", key, pairs)
            return JobIdentity(f"indexed-job/{value}", "indexed-job", key, ((key, value),))
    return None


def names_a_plain_job(labels: Mapping[str, str]) -> bool:
    """True when the pod carries a Job's name label (so it came from a Job that is not Indexed,
    when ``job_identity`` found nothing)."""
    return bool(labels.get(JOB_NAME_LABEL) or labels.get(LEGACY_JOB_NAME_LABEL))
