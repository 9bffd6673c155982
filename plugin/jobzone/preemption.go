package jobzone

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	preemptionpkg "k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// JobZone is the profile's preemption: it runs kube-scheduler's DefaultPreemption (the same
// candidate search, victim order, PodDisruptionBudget handling and asynchronous API calls),
// with the victims grown to whole jobs, so the profile enables JobZone at postFilter and
// disables DefaultPreemption. The rules (whole_job_preemption.go):
//
//   - preemption follows priority, never a label: a job's priority is its highest member's;
//     a pod that outranks a job may take its GPUs by evicting every placed member of it, on
//     every node, and a pod that does not takes none of them;
//   - a member held at Permit is a victim on the same terms: preemption rejects it at
//     Permit, which releases the whole job's hold (Unreserve);
//   - a member of a job not yet placed preempts nothing for itself (PostFilter ends its
//     attempt before preemption: failover.go), while the rest of its job cannot fit.

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

// rejectHeldVictim ends, under the plugin's lock, the hold of a victim that waits at Permit in
// a job's hold: every held member is rejected under JobZone's name and the job's members are
// requeued, so the job is planned again at once, in another zone if this one no longer holds
// it. It reports whether it did; a victim in no hold is left to DefaultPreemption (a waiting
// pod is rejected, a placed one deleted).
func (pl *JobZone) rejectHeldVictim(ctx context.Context, preemptor, victim *v1.Pod, nodeName string) bool {
	job, err := pl.declaredJob(victim)
	if err != nil || job == nil {
		return false
	}
	key := jobKey(victim, job)
	logger := klog.FromContext(ctx)
	now := pl.clock.Now()
	pl.mu.Lock()
	g := pl.gangs[key]
	if g == nil {
		pl.mu.Unlock()
		return false
	}
	if _, held := g.held[victim.UID]; !held {
		pl.mu.Unlock()
		return false
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
