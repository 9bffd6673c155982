package zonepolicy

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// VictimsOutcome says what growing one candidate node's victims to whole jobs found.
type VictimsOutcome string

const (
	// VictimsWhole: every job among the victims is evicted whole.
	VictimsWhole VictimsOutcome = "whole"
	// VictimsBreakJob: a job among the victims has members the caller cannot see (on another
	// node, or not read), so evicting the victims would leave part of it running.
	VictimsBreakJob VictimsOutcome = "breaks-job"
	// VictimsOutranked: a victim's job has a member at or above the preemptor's priority, so
	// the job is not a victim at all.
	VictimsOutranked VictimsOutcome = "outranked"
)

// JobVictims is a candidate node's victims made whole and what that says of the node.
type JobVictims struct {
	Outcome VictimsOutcome
	// Victims are the victims, then every other placed member of their jobs among the pods
	// seen, in order (nil when Outranked).
	Victims []*v1.Pod
	// Broken counts the victims whose job has members the caller cannot see.
	Broken int
}

// WholeJobVictims grows the victims kube-scheduler chose on one node (each of lower priority
// than the preemptor) to whole jobs, from pods, the other pods the caller sees (any node,
// placed or not). The rule, preemption that follows priority: a job is a unit; its priority is
// the highest of its members'; a preemptor that does not outrank it takes none of its members
// (Outranked); one that does takes every member.
//
// A victim in a job of more than one pod brings every member among pods that is placed
// (spec.nodeName set). A member among pods at or above preemptorPriority makes the outcome
// Outranked. A job with fewer members seen (victims and pods) than its size makes it
// BreakJob. A pod whose job cannot be read, or a job of one pod, is its own job: no label
// protects a pod from a higher priority. The twin of policy/job_preemption.py's
// whole_job_victims, held to the victims cases of tests/vectors/zone_cases.json.
func WholeJobVictims(victims, pods []*v1.Pod, preemptorPriority int32, s Settings, owners OwnerJobs) JobVictims {
	chosen := append([]*v1.Pod(nil), victims...)
	seen := map[string]bool{}
	for _, victim := range victims {
		seen[podKey(victim)] = true
	}
	found := map[string]int64{}
	broken := 0
	for _, victim := range victims {
		job, err := JobFromPod(victim, s, owners)
		if err != nil || job == nil || job.Size <= 1 {
			continue
		}
		key := victim.Namespace + "/" + job.Name
		count, known := found[key]
		if !known {
			var others []*v1.Pod
			for _, pod := range pods {
				if IsMember(pod, victim.Namespace, job, s) {
					others = append(others, pod)
				}
			}
			members := map[string]bool{}
			for _, pod := range others {
				if corev1helpers.PodPriority(pod) >= preemptorPriority {
					return JobVictims{Outcome: VictimsOutranked}
				}
				members[podKey(pod)] = true
			}
			for _, pod := range victims {
				if IsMember(pod, victim.Namespace, job, s) {
					members[podKey(pod)] = true
				}
			}
			count = int64(len(members))
			found[key] = count
			for _, pod := range others {
				if k := podKey(pod); !seen[k] && pod.Spec.NodeName != "" {
					seen[k] = true
					chosen = append(chosen, pod)
				}
			}
		}
		if count < job.Size {
			broken++
		}
	}
	if broken > 0 {
		return JobVictims{Outcome: VictimsBreakJob, Victims: chosen, Broken: broken}
	}
	return JobVictims{Outcome: VictimsWhole, Victims: chosen}
}

// podKey is a pod's identity: its uid, else its namespace and name.
func podKey(pod *v1.Pod) string {
	if pod.UID != types.UID("") {
		return "uid:" + string(pod.UID)
	}
	return pod.Namespace + "/" + pod.Name
}
