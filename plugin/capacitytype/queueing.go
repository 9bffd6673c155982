package capacitytype

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
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

// isSchedulableAfterNodeChange returns Queue when an added node suits the pod, or an
// updated node suits it now and did not before. An invalid pod suits no node, so node
// events are skipped for it; a pod without a choice is never rejected by this plugin,
// so any node event is worth a retry.
func (pl *CapacityType) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	choice, err := gpupolicy.CapacityChoiceFromPod(pod, pl.settings)
	if err != nil {
		logger.V(5).Info("pod is invalid for CapacityType; a node change cannot help", "pod", klog.KObj(pod), "reason", err.Error())
		return fwk.QueueSkip, nil
	}
	if choice == gpupolicy.NoChoice {
		return fwk.Queue, nil
	}
	if fits, reason := gpupolicy.FitsCapacityType(choice, newNode, pl.settings); !fits {
		logger.V(5).Info("node still does not suit the pod's capacity type", "pod", klog.KObj(pod), "node", klog.KObj(newNode), "reason", reason)
		return fwk.QueueSkip, nil
	}
	if oldNode != nil {
		if fitted, _ := gpupolicy.FitsCapacityType(choice, oldNode, pl.settings); fitted {
			logger.V(5).Info("node suited the pod before the update too", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return fwk.QueueSkip, nil
		}
	}
	logger.V(4).Info("node now suits the pod's capacity type", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.Queue, nil
}

// isSchedulableAfterPodUpdate returns Queue when the pending pod's choice became valid
// or changed (a required choice relaxed to a preference, or the other type chosen).
func (pl *CapacityType) isSchedulableAfterPodUpdate(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, newPod, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newPod == nil || newPod.UID != pod.UID {
		return fwk.QueueSkip, nil
	}
	newChoice, err := gpupolicy.CapacityChoiceFromPod(newPod, pl.settings)
	if err != nil {
		logger.V(5).Info("updated pod is still invalid for CapacityType", "pod", klog.KObj(newPod), "reason", err.Error())
		return fwk.QueueSkip, nil
	}
	oldChoice, err := gpupolicy.CapacityChoiceFromPod(oldPod, pl.settings)
	if err != nil || newChoice != oldChoice {
		logger.V(4).Info("pod's capacity-type choice was corrected or changed", "pod", klog.KObj(newPod), "choice", newChoice)
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
