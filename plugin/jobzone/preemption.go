package jobzone

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	preemptionpkg "k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

// JobZone is the profile's preemption: it runs kube-scheduler's DefaultPreemption (the same
// candidate search, victim order, PodDisruptionBudget handling and asynchronous API calls),
// with the victims grown to whole jobs, so the profile enables JobZone at postFilter and
// disables DefaultPreemption. The rules (whole_job_preemption.go):
//
//   - preemption follows priority, never a label: a job's priority is its highest member's;
//     a pod that outranks a job may take its GPUs by evicting every placed member of it, on
//     every node, and a pod that does not takes none of them;
//   - a member held at Permit is a victim on the same terms: its eviction ends the whole
//     job's hold under JobZone's lock and requeues the job (rejectHeldVictim);
//   - a member of a job not yet placed preempts nothing for itself (PostFilter ends its
//     attempt before preemption: failover.go), while the rest of its job cannot fit; a job that
//     fits in no zone preempts as a whole (gang_preemption.go).

// newPreemption builds DefaultPreemption with the configured candidate limits and the rules
// above; nil without an informer factory (no API server: nothing to evict).
func (pl *JobZone) newPreemption(ctx context.Context) (*defaultpreemption.DefaultPreemption, error) {
	if pl.handle.SharedInformerFactory() == nil {
		return nil, nil
	}
	args := pl.config.preemption
	preemption, err := defaultpreemption.New(ctx, &args, pl.handle, plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	preemption.IsEligiblePod = pl.mayEvict
	preemption.Evaluator.Interface = &wholeJobPreemption{DefaultPreemption: preemption, pl: pl}
	evict := preemption.Evaluator.PreemptPod
	preemption.Evaluator.PreemptPod = func(ctx context.Context, c preemptionpkg.Candidate, preemptor, victim *v1.Pod, plugin string) error {
		if pl.rejectHeldVictim(ctx, preemptor, victim, c.Name()) {
			return nil
		}
		return evict(ctx, c, preemptor, victim, plugin)
	}
	return preemption, nil
}

// rejectHeldVictim takes a victim that is a member of a same-zone job not bound in the API (it
// was only assumed by this scheduler: held at Permit, or already given up). When it is in its
// job's hold, the hold ends under the plugin's lock: every held member is rejected under
// JobZone's name and the job's members are requeued, so the job is planned again at once, in
// another zone if this one no longer holds it. A member already given up holds nothing and is
// not deleted. It reports whether it took the victim; any other victim is DefaultPreemption's
// (a waiting pod is rejected, a placed one deleted).
func (pl *JobZone) rejectHeldVictim(ctx context.Context, preemptor, victim *v1.Pod, nodeName string) bool {
	job, err := pl.declaredJob(victim)
	if err != nil || job == nil || pl.boundInAPI(victim) {
		return false
	}
	key := jobKey(victim, job)
	logger := klog.FromContext(ctx)
	now := pl.clock.Now()
	pl.mu.Lock()
	g := pl.gangs[key]
	if g == nil {
		pl.mu.Unlock()
		return true
	}
	if _, held := g.held[victim.UID]; !held {
		pl.mu.Unlock()
		return true
	}
	message := fmt.Sprintf(PreemptedFormat, key, klog.KObj(victim), klog.KObj(preemptor))
	pl.endHoldLocked(key, victim.Namespace, job, g, message, HoldRejected, now)
	pl.mu.Unlock()
	logger.V(2).Info("preemption took a held member; the job is placed again", "job", key, "member", klog.KObj(victim),
		"preemptor", klog.KObj(preemptor), "node", nodeName)
	if recorder := pl.handle.EventRecorder(); recorder != nil {
		recorder.Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v on node %v", preemptor.UID, nodeName)
	}
	pl.activateMembers(logger, victim.Namespace, job, "")
	return true
}

// boundInAPI reports whether the pod informer has the pod bound to a node (true without an
// informer, when that cannot be told).
func (pl *JobZone) boundInAPI(pod *v1.Pod) bool {
	if pl.pods == nil {
		return pod.Spec.NodeName != "" && pl.handle.GetWaitingPod(pod.UID) == nil
	}
	current, err := pl.pods.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && current.UID == pod.UID && current.Spec.NodeName != ""
}

// preempt runs DefaultPreemption for a pod JobZone does not end the attempt for; a status
// message of JobZone's own goes first.
func (pl *JobZone) preempt(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader, reason string) (*fwk.PostFilterResult, *fwk.Status) {
	if pl.preemption == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, reason)
	}
	result, status := pl.preemption.PostFilter(ctx, state, pod, m)
	if reason == "" || status.IsSuccess() {
		return result, status
	}
	return result, fwk.NewStatus(status.Code(), reason+"; "+status.Message())
}

// preemptionArgs are DefaultPreemption's args at kube-scheduler's own defaults, changed by
// ours.
func preemptionArgs(args Args) schedulerconfig.DefaultPreemptionArgs {
	var defaults configv1.DefaultPreemptionArgs
	scheme.Scheme.Default(&defaults)
	out := schedulerconfig.DefaultPreemptionArgs{
		MinCandidateNodesPercentage: *defaults.MinCandidateNodesPercentage,
		MinCandidateNodesAbsolute:   *defaults.MinCandidateNodesAbsolute,
	}
	if args.MinCandidateNodesPercentage != nil {
		out.MinCandidateNodesPercentage = *args.MinCandidateNodesPercentage
	}
	if args.MinCandidateNodesAbsolute != nil {
		out.MinCandidateNodesAbsolute = *args.MinCandidateNodesAbsolute
	}
	return out
}
