package gpuscheduler

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
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

// isSchedulableAfterNodeChange returns Queue when an added node fits the pod, or an
// updated node fits now and did not before. An invalid pod fits no node, so node
// events are skipped for it; a pod without a minimum fits every node, so any node
// event is worth a retry (this plugin cannot be what still blocks it).
func (pl *GPUScheduler) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	req, err := gpupolicy.FromPod(pod, pl.settings)
	if err != nil {
		logger.V(5).Info("pod is invalid for GPUScheduler; a node change cannot help", "pod", klog.KObj(pod), "reason", err.Error())
		return fwk.QueueSkip, nil
	}
	if req.MinMemoryMiB == 0 {
		return fwk.Queue, nil
	}
	if fits, _ := gpupolicy.FitsMemory(req, newNode, pl.settings); !fits {
		logger.V(5).Info("node's GPU memory still does not fit the pod", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	if oldNode != nil {
		if fitted, _ := gpupolicy.FitsMemory(req, oldNode, pl.settings); fitted {
			logger.V(5).Info("node fitted the pod before the update too", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return fwk.QueueSkip, nil
		}
	}
	logger.V(4).Info("node's GPU memory now fits the pod", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.Queue, nil
}

// isSchedulableAfterPodUpdate returns Queue when the pending pod itself was updated so
// that it is now valid after being invalid, or asks for less GPU memory than before.
func (pl *GPUScheduler) isSchedulableAfterPodUpdate(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, newPod, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newPod == nil || newPod.UID != pod.UID {
		return fwk.QueueSkip, nil
	}
	newReq, err := gpupolicy.FromPod(newPod, pl.settings)
	if err != nil {
		logger.V(5).Info("updated pod is still invalid for GPUScheduler", "pod", klog.KObj(newPod), "reason", err.Error())
		return fwk.QueueSkip, nil
	}
	oldReq, err := gpupolicy.FromPod(oldPod, pl.settings)
	if err != nil || newReq.MinMemoryMiB < oldReq.MinMemoryMiB {
		logger.V(4).Info("pod's GPU-memory requirement was corrected or lowered", "pod", klog.KObj(newPod))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
