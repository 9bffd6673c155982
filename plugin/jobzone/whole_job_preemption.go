package jobzone

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// OutrankedMessage is a candidate node's status when a victim's job gained a member at or
// above the preemptor's priority between the victim search and the job's check.
const OutrankedMessage = "a victim's job has a member at or above the preemptor's priority"

// Preemption that follows priority, never a label. A same-zone job is a unit for
// preemption:
//
//   - its priority is the highest of its members'; a pod (in a job or not) that does not
//     outrank the job takes none of its members, whichever member the dry run looked at;
//   - a pod that outranks it may take its GPUs only by evicting every member: when a member
//     is among a candidate node's victims, every other placed member of its job, on any
//     node, joins that node's victims, so kube-scheduler's own evaluator (DisruptionTarget
//     condition, deletion, events, asynchronous API calls) evicts the job whole, and its
//     candidate ranking (PodDisruptionBudget violations, the victims' priorities, their
//     count) weighs the whole job, not one member;
//   - the victims kube-scheduler chose stay victims: no label keeps a pod from a higher
//     priority, and a pod whose job cannot be read is a job of its own.
//
// The rule itself is zonepolicy.WholeJobVictims, which the extender modes' preempt verb
// shares through the victims vectors.
//
// wholeJobPreemption is DefaultPreemption's preemption.Interface with each candidate node's
// victims grown to whole jobs; everything else is DefaultPreemption's.
type wholeJobPreemption struct {
	*defaultpreemption.DefaultPreemption
	pl *JobZone
}

// SelectVictimsOnNode runs DefaultPreemption's victim search on the node, then adds every
// other placed member of each victim's job (wholeJob).
func (w *wholeJobPreemption) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *v1.Pod,
	nodeInfo fwk.NodeInfo, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	victims, violations, status := w.DefaultPreemption.SelectVictimsOnNode(ctx, state, pod, nodeInfo, pdbs)
	if !status.IsSuccess() || len(victims) == 0 {
		return victims, violations, status
	}
	return w.pl.wholeJob(klog.FromContext(ctx), pod, victims, violations, pdbs, w.MoreImportantPod)
}

// wholeJob grows a candidate node's victims to whole jobs: the victims, then the other placed
// members of their jobs, ordered from the most to the least important (kube-scheduler reads
// the first as the node's highest-priority victim), with the added members' budget
// violations counted.
func (pl *JobZone) wholeJob(logger klog.Logger, preemptor *v1.Pod, victims []*v1.Pod, violations int,
	pdbs []*policy.PodDisruptionBudget, moreImportant defaultpreemption.MoreImportantPodFunc) ([]*v1.Pod, int, *fwk.Status) {
	whole := zonepolicy.WholeJobVictims(victims, pl.membersOf(victims), corev1helpers.PodPriority(preemptor), pl.config.zone, pl.ownerJobs)
	if whole.Outcome == zonepolicy.VictimsOutranked {
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, OutrankedMessage)
	}
	added := whole.Victims[len(victims):]
	if len(added) == 0 {
		return victims, violations, nil
	}
	logger.V(3).Info("preemption takes whole jobs", "preemptor", klog.KObj(preemptor), "chosen", len(victims), "added", len(added))
	violations += addedViolations(victims, added, pdbs)
	all := whole.Victims
	sort.SliceStable(all, func(i, j int) bool { return moreImportant(all[i], all[j]) })
	return all, violations, nil
}

// mayEvict is the victim rule DefaultPreemption applies to each pod of a candidate node (it
// has already checked that the victim's own priority is below the preemptor's): a member of
// a job may be a victim only when the preemptor outranks every member of its job. A member
// held at Permit follows the same rule; preempting it rejects it, which releases its whole
// job's hold.
func (pl *JobZone) mayEvict(_ fwk.NodeInfo, victim fwk.PodInfo, preemptor *v1.Pod) bool {
	pod := victim.GetPod()
	chosen := []*v1.Pod{pod}
	whole := zonepolicy.WholeJobVictims(chosen, pl.membersOf(chosen), corev1helpers.PodPriority(preemptor), pl.config.zone, pl.ownerJobs)
	return whole.Outcome != zonepolicy.VictimsOutranked
}

// membersOf lists, from the scheduler's pod informer, the pods that carry the labels of each
// victim's job (zonepolicy.WholeJobVictims keeps the members among them); nil without an
// informer or for victims in no job.
func (pl *JobZone) membersOf(victims []*v1.Pod) []*v1.Pod {
	if pl.pods == nil {
		return nil
	}
	var pods []*v1.Pod
	listed := map[string]bool{}
	for _, victim := range victims {
		job, err := pl.jobFromPod(victim)
		if err != nil || job == nil || job.Size <= 1 || listed[jobKey(victim, job)] {
			continue
		}
		listed[jobKey(victim, job)] = true
		found, err := pl.pods.Pods(victim.Namespace).List(labels.SelectorFromSet(job.MatchLabels))
		if err != nil {
			continue
		}
		pods = append(pods, found...)
	}
	return pods
}

// addedViolations counts the added victims whose PodDisruptionBudget has no disruption left
// once the node's own victims, then the added ones before them, are taken from it: the count
// kube-scheduler ranks candidate nodes by first. A pod the budget already lists as disrupted
// takes nothing from it.
func addedViolations(victims, added []*v1.Pod, pdbs []*policy.PodDisruptionBudget) int {
	left := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		left[i] = pdb.Status.DisruptionsAllowed
	}
	take := func(pod *v1.Pod) bool {
		violated := false
		for i, pdb := range pdbs {
			if budgetCounts(pdb, pod) {
				left[i]--
				violated = violated || left[i] < 0
			}
		}
		return violated
	}
	for _, pod := range victims {
		take(pod)
	}
	count := 0
	for _, pod := range added {
		if take(pod) {
			count++
		}
	}
	return count
}

// budgetCounts reports whether evicting pod takes one disruption from pdb: same namespace,
// the budget's selector (an empty or invalid one selects nothing) matches the pod's labels,
// and the pod is not already among the budget's disrupted pods.
func budgetCounts(pdb *policy.PodDisruptionBudget, pod *v1.Pod) bool {
	if pdb.Namespace != pod.Namespace || len(pod.Labels) == 0 {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
		return false
	}
	_, disrupted := pdb.Status.DisruptedPods[pod.Name]
	return !disrupted
}
