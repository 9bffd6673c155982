package capacitytype

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/requeue"
)

// EventsToRegister names the cluster events that can undo this plugin's rejection: a
// Node added, relabelled (its capacity type) or retainted (a disruption taint
// removed), and an update of the pending pod itself (its annotation corrected or
// changed). Each comes with a hint that requeues the pod only when the change can
// make it pass this plugin.
func (pl *CapacityType) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint},
			QueueingHintFn: pl.isSchedulableAfterNodeChange,
		},
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update},
			QueueingHintFn: pl.isSchedulableAfterPodUpdate,
		},
	}, nil
}

// requeueRule is the capacity-type rule as the hints read it: a pod without a choice
// passes every node; a pod whose choice changed at all (a required choice relaxed to a
// preference, or the other type chosen) may now pass where it did not.
func (pl *CapacityType) requeueRule() requeue.Rule[gpupolicy.CapacityChoice] {
	return requeue.Rule[gpupolicy.CapacityChoice]{
		Plugin: Name,
		FromPod: func(pod *v1.Pod) (gpupolicy.CapacityChoice, error) {
			return gpupolicy.CapacityChoiceFromPod(pod, pl.settings)
		},
		Unconstrained: func(choice gpupolicy.CapacityChoice) bool { return choice == gpupolicy.NoChoice },
		Fits: func(choice gpupolicy.CapacityChoice, node *v1.Node) bool {
			fits, _ := gpupolicy.FitsCapacityType(choice, node, pl.settings)
			return fits
		},
		Relaxed: func(old, new gpupolicy.CapacityChoice) bool { return new != old },
	}
}

func (pl *CapacityType) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	return pl.requeueRule().AfterNodeChange(logger, pod, oldObj, newObj)
}

func (pl *CapacityType) isSchedulableAfterPodUpdate(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	return pl.requeueRule().AfterPodUpdate(logger, pod, oldObj, newObj)
}
