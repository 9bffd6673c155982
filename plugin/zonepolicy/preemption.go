package zonepolicy

import v1 "k8s.io/api/core/v1"

// SystemCriticalPriority is system-cluster-critical's priority (kube-scheduler's
// scheduling.SystemCriticalPriority): a preemptor at or above it may evict a job's member.
const SystemCriticalPriority int32 = 2_000_000_000

// ProtectedVictim reports whether evicting victim, a bound pod, would break a job: it is a
// member of a same-zone job of more than one pod and the preemptor's priority is below
// SystemCriticalPriority. A pod whose job annotations are invalid, or whose size cannot be
// read, is no member. The twin of policy/job_preemption.py's is_protected_victim, held to the
// victims cases of tests/vectors/zone_cases.json.
func ProtectedVictim(victim *v1.Pod, preemptorPriority int32, s Settings, owners OwnerJobs) bool {
	if preemptorPriority >= SystemCriticalPriority {
		return false
	}
	job, err := JobFromPod(victim, s, owners)
	return err == nil && job != nil && job.Size > 1
}
