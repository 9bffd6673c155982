package zonepolicy

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OwnerJobs reads a batch/v1 Job by namespace and name; nil when there is no such Job.
// The scheduler plugin reads them from its informer's cache.
type OwnerJobs func(namespace, name string) *batchv1.Job

// SizeFromCompletions is Job.SizeFrom for a size read from the pod's Indexed Job.
const SizeFromCompletions = "spec.completions"

// Reasons IndexedJobSize fails with, and the formats of the messages built from them.
const (
	// NotOwnedByJobFormat formats, with the job-size annotation, the message for an
	// Indexed Job's labels on a pod no batch/v1 Job controls.
	NotOwnedByJobFormat = ReasonMissingJobSize + ": the pod names an Indexed Job but has no controller ownerReference" +
		" to a batch/v1 Job to read spec.completions from; set the annotation %s"
	// OwnerJobMissingFormat formats, with the Job's name, the message for a pod whose
	// Job is gone or is another Job of the same name.
	OwnerJobMissingFormat = "the pod's Job %s no longer exists (deleted, or created again under its name)"
	// InvalidCompletionsFormat formats, with Settings.MaxJobSize, the message for a Job
	// whose spec.completions is absent or out of range.
	InvalidCompletionsFormat = "job size from the Job's spec.completions must be an integer from 1 to %d"
	// JobRunsInWavesFormat formats, with the Job's name, parallelism and completions,
	// the message for a Job that runs fewer pods at a time than it completes.
	JobRunsInWavesFormat = "the Indexed Job %s runs %d of its %d pods at a time: a same-zone job runs every" +
		" member at once; set spec.parallelism to spec.completions"
)

// IndexedJobSize returns the size of the Indexed Job that controls pod: its
// spec.completions. The Job is the one in the pod's controller ownerReference and must
// have the uid written there (a Job created again under its name is another job); it must
// run every pod at once (spec.parallelism, default 1, at least spec.completions). The
// Python twin is policy/owner_job.py.
func IndexedJobSize(pod *v1.Pod, owners OwnerJobs, s Settings) (int64, error) {
	owner := controllingJob(pod)
	if owner == nil {
		return 0, fmt.Errorf(NotOwnedByJobFormat, s.JobSizeAnnotation)
	}
	job := owners(pod.Namespace, owner.Name)
	if job == nil || job.UID != owner.UID {
		return 0, fmt.Errorf(OwnerJobMissingFormat, owner.Name)
	}
	if job.Spec.Completions == nil || int64(*job.Spec.Completions) < 1 || int64(*job.Spec.Completions) > s.MaxJobSize {
		return 0, fmt.Errorf(InvalidCompletionsFormat, s.MaxJobSize)
	}
	completions, parallelism := *job.Spec.Completions, int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	if parallelism < completions {
		return 0, fmt.Errorf(JobRunsInWavesFormat, owner.Name, parallelism, completions)
	}
	return int64(completions), nil
}

// controllingJob is the pod's controller ownerReference when it is a batch/v1 Job.
func controllingJob(pod *v1.Pod) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return nil
	}
	return ref
}

// errNoOwnerJobs is SizeNotOnPodFormat for an Indexed Job when there is no way to read Jobs.
func errNoOwnerJobs(s Settings) error {
	return fmt.Errorf(SizeNotOnPodFormat, sourceOwner[SourceIndexedJob], s.JobSizeAnnotation)
}
