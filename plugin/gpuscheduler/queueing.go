package gpuscheduler

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/requeue"
)

// EventsToRegister names the cluster events that can undo this plugin's rejection:
// a Node added or relabelled (its GPU-memory label may now meet the minimum), and
// an update of the pending pod itself (its annotation may have been corrected or
// lowered). Each comes with a hint that requeues the pod only when the change can
// make it pass this plugin.
func (pl *GPUScheduler) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel},
			QueueingHintFn: pl.isSchedulableAfterNodeChange,
		},
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update},
			QueueingHintFn: pl.isSchedulableAfterPodUpdate,
		},
	}, nil
}

// requeueRule is the GPU-memory rule as the hints read it: a pod without a minimum fits
// every node; a pod whose minimum was lowered may now fit where it did not.
func (pl *GPUScheduler) requeueRule() requeue.Rule[gpupolicy.Requirement] {
	return requeue.Rule[gpupolicy.Requirement]{
		Plugin:        Name,
		FromPod:       func(pod *v1.Pod) (gpupolicy.Requirement, error) { return gpupolicy.FromPod(pod, pl.settings) },
		Unconstrained: func(req gpupolicy.Requirement) bool { return req.MinMemoryMiB == 0 },
		Fits: func(req gpupolicy.Requirement, node *v1.Node) bool {
			fits, _ := gpupolicy.FitsMemory(req, node, pl.settings)
			return fits
		},
		Relaxed: func(old, new gpupolicy.Requirement) bool { return new.MinMemoryMiB < old.MinMemoryMiB },
	}
}

func (pl *GPUScheduler) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	return pl.requeueRule().AfterNodeChange(logger, pod, oldObj, newObj)
}

func (pl *GPUScheduler) isSchedulableAfterPodUpdate(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	return pl.requeueRule().AfterPodUpdate(logger, pod, oldObj, newObj)
}
