package jobzone

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// JobZone is the profile's preemption: it runs kube-scheduler's DefaultPreemption (the same
// candidate search, victim order, PodDisruptionBudget handling and asynchronous API calls),
// with one rule added for victims, so the profile enables JobZone at postFilter and disables
// DefaultPreemption. The rule (Coscheduling's all or nothing, for victims):
//
//   - A member of a same-zone job of more than one pod that is bound (or binding) is never a
//     victim: evicting one member stops the whole job while freeing one pod's GPUs. Only
//     system-critical pods (priority at least system-cluster-critical's) may still evict it,
//     as upstream asks of every such rule.
//   - A member held at Permit may be a victim: preemption rejects it at Permit, which releases
//     the whole job's hold (Unreserve), so the job gives its GPUs up whole and is placed again.
//   - A member of a job not yet placed preempts nothing for itself (PostFilter ends its attempt
//     before preemption: failover.go).

// newPreemption builds DefaultPreemption with the configured candidate limits and the victim
// rule above; nil without an informer factory (no API server: nothing to evict).
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
	return preemption, nil
}

// mayEvict is the victim rule: false for a bound member of a job of more than one pod, unless
// the preemptor is system-critical (zonepolicy.ProtectedVictim, which the extender's preempt verb
// shares through the vectors). The framework has already checked that the victim's
// priority is lower than the preemptor's.
func (pl *JobZone) mayEvict(_ fwk.NodeInfo, victim fwk.PodInfo, preemptor *v1.Pod) bool {
	pod := victim.GetPod()
	if pl.handle.GetWaitingPod(pod.UID) != nil {
		return true
	}
	return !zonepolicy.ProtectedVictim(pod, corev1helpers.PodPriority(preemptor), pl.config.zone, pl.ownerJobs)
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
