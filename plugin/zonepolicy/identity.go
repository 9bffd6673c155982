package zonepolicy

import (
	"errors"

	v1 "k8s.io/api/core/v1"
)

// Source says where a pod's job came from: our label, or the labels of the controller
// that made the pod. The sources are tried in the order of the constants; the first
// present decides (a label with an empty value counts as absent).
type Source string

const (
	// SourceJobLabel is our own label (Settings.JobLabel): the user's word wins.
	SourceJobLabel Source = "job-label"
	// SourcePodGroup is scheduler-plugins' Coscheduling label (Settings.PodGroupLabel).
	SourcePodGroup Source = "pod-group"
	// SourceJobSet is JobSetNameLabel: one job per JobSet (a Kubeflow Trainer v2
	// TrainJob runs as the JobSet of its name).
	SourceJobSet Source = "jobset"
	// SourceKubeflow is KubeflowJobNameLabel, with KubeflowOperatorLabel where set
	// (training-operator v1, mpi-operator).
	SourceKubeflow Source = "kubeflow"
	// SourceLeaderWorkerSet is LWSNameLabel with LWSGroupIndexLabel: one job per group.
	SourceLeaderWorkerSet Source = "leaderworkerset"
	// SourceIndexedJob is JobNameLabel (or LegacyJobNameLabel), only on a pod of an
	// Indexed Job (JobCompletionIndex as an annotation or a label), with the Job's
	// JobControllerUIDLabel where the Job controller wrote it.
	SourceIndexedJob Source = "indexed-job"
)

// Labels and annotations job controllers write on the pods they create.
const (
	// JobSetNameLabel is JobSet's pod label naming the JobSet.
	JobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"
	// KubeflowJobNameLabel is the Kubeflow training job's name on its pods.
	KubeflowJobNameLabel = "training.kubeflow.org/job-name"
	// KubeflowOperatorLabel names the Kubeflow controller that made the pod.
	KubeflowOperatorLabel = "training.kubeflow.org/operator-name"
	// LWSNameLabel is LeaderWorkerSet's pod label naming the LeaderWorkerSet.
	LWSNameLabel = "leaderworkerset.sigs.k8s.io/name"
	// LWSGroupIndexLabel is the index of the pod's group (a leader and its workers).
	LWSGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index"
	// LWSSizeAnnotation is LeaderWorkerSet's pod annotation holding a group's pod count.
	LWSSizeAnnotation = "leaderworkerset.sigs.k8s.io/size"
	// JobNameLabel is Kubernetes' pod label naming the Job.
	JobNameLabel = "batch.kubernetes.io/job-name"
	// LegacyJobNameLabel is the unprefixed Job name label Kubernetes still writes.
	LegacyJobNameLabel = "job-name"
	// JobCompletionIndex is an Indexed Job pod's completion index (annotation and label).
	JobCompletionIndex = "batch.kubernetes.io/job-completion-index"
	// JobControllerUIDLabel is the uid of the Job that made the pod (absent when the Job
	// sets its own selector). A Job created again under its name is another job, and the
	// old Job's pods, still terminating, are not its members.
	JobControllerUIDLabel = "batch.kubernetes.io/controller-uid"
)

// Reasons IdentityOf and JobFromPod give for a pod whose controller labels name no job.
const (
	// ReasonLWSWithoutGroupIndex: a LeaderWorkerSet pod not yet given its group index.
	ReasonLWSWithoutGroupIndex = "a LeaderWorkerSet pod needs the label " + LWSGroupIndexLabel +
		", which LeaderWorkerSet's own webhook sets"
	// ReasonJobNotIndexed: a pod of a Job whose completion mode is not Indexed.
	ReasonJobNotIndexed = "the pod is from a Job that is not Indexed (no " + JobCompletionIndex +
		"): only an Indexed Job's pods form a same-zone job"
)

// sourceOwner names what made a source's pods, for SizeNotOnPodFormat.
var sourceOwner = map[Source]string{
	SourcePodGroup:        "a PodGroup",
	SourceJobSet:          "a JobSet",
	SourceKubeflow:        "a Kubeflow training job",
	SourceLeaderWorkerSet: "a LeaderWorkerSet group",
	SourceIndexedJob:      "an Indexed Job",
}

// Identity is the job a pod belongs to, within the pod's namespace.
type Identity struct {
	// Name is the job's name, unique within the namespace across every source: our
	// label's value as it is; otherwise the source and the label value(s) joined by
	// "/", which no label value can hold.
	Name   string
	Source Source
	// NameLabel is the label whose value names the job.
	NameLabel string
	// MatchLabels are the labels, with their values, every pod of the job carries: a
	// label selector for the job's pods.
	MatchLabels map[string]string
}

// IdentityOf returns the job the pod with these labels and annotations belongs to, nil
// when no source names one; ReasonLWSWithoutGroupIndex for a LeaderWorkerSet pod without
// its group index, when no earlier source decides.
func IdentityOf(labels, annotations map[string]string, s Settings) (*Identity, error) {
	if value := labels[s.JobLabel]; value != "" {
		return single(value, SourceJobLabel, s.JobLabel, value), nil
	}
	if value := labels[s.PodGroupLabel]; value != "" {
		return single(string(SourcePodGroup)+"/"+value, SourcePodGroup, s.PodGroupLabel, value), nil
	}
	if value := labels[JobSetNameLabel]; value != "" {
		return single(string(SourceJobSet)+"/"+value, SourceJobSet, JobSetNameLabel, value), nil
	}
	if job := labels[KubeflowJobNameLabel]; job != "" {
		operator := labels[KubeflowOperatorLabel]
		if operator == "" {
			return single(string(SourceKubeflow)+"/"+job, SourceKubeflow, KubeflowJobNameLabel, job), nil
		}
		return &Identity{
			Name: string(SourceKubeflow) + "/" + operator + "/" + job, Source: SourceKubeflow, NameLabel: KubeflowJobNameLabel,
			MatchLabels: map[string]string{KubeflowJobNameLabel: job, KubeflowOperatorLabel: operator},
		}, nil
	}
	if name := labels[LWSNameLabel]; name != "" {
		group := labels[LWSGroupIndexLabel]
		if group == "" {
			return nil, errors.New(ReasonLWSWithoutGroupIndex)
		}
		return &Identity{
			Name: string(SourceLeaderWorkerSet) + "/" + name + "/" + group, Source: SourceLeaderWorkerSet, NameLabel: LWSNameLabel,
			MatchLabels: map[string]string{LWSNameLabel: name, LWSGroupIndexLabel: group},
		}, nil
	}
	if annotations[JobCompletionIndex] == "" && labels[JobCompletionIndex] == "" {
		return nil, nil
	}
	for _, key := range []string{JobNameLabel, LegacyJobNameLabel} {
		value := labels[key]
		switch uid := labels[JobControllerUIDLabel]; {
		case value == "":
			continue
		case uid != "":
			return &Identity{
				Name: string(SourceIndexedJob) + "/" + value + "/" + uid, Source: SourceIndexedJob, NameLabel: key,
				MatchLabels: map[string]string{key: value, JobControllerUIDLabel: uid},
			}, nil
		default:
			return single(string(SourceIndexedJob)+"/"+value, SourceIndexedJob, key, value), nil
		}
	}
	return nil, nil
}

func single(name string, source Source, label, value string) *Identity {
	return &Identity{Name: name, Source: source, NameLabel: label, MatchLabels: map[string]string{label: value}}
}

// namesPlainJob reports whether the pod carries a Job's name label (so, when IdentityOf
// found nothing, it came from a Job that is not Indexed).
func namesPlainJob(labels map[string]string) bool {
	return labels[JobNameLabel] != "" || labels[LegacyJobNameLabel] != ""
}

// IsMember reports whether other belongs to job of namespace: same namespace, the
// zone-policy annotation SameZone (same-zone is each pod's opt-in, so a JobSet's pod
// without it is not counted), the job's labels, and no earlier source naming another
// job. Its size is not looked at (members declaring different sizes are still members).
// The label check comes first, so a pod of another job costs a map lookup or two.
func IsMember(other *v1.Pod, namespace string, job *Job, s Settings) bool {
	if other.Namespace != namespace {
		return false
	}
	for key, value := range job.MatchLabels {
		if got, ok := other.Labels[key]; !ok || got != value {
			return false
		}
	}
	if other.Annotations[s.ZonePolicyAnnotation] != SameZone {
		return false
	}
	identity, err := IdentityOf(other.Labels, other.Annotations, s)
	return err == nil && identity != nil && identity.Name == job.Name
}
