package jobzone

import (
	"context"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// EventsToRegister names the cluster events that can undo this plugin's rejection: a
// Node added or changed (new room, a zone label), an assigned pod deleted (GPUs freed,
// or a member given up so the job is planned again), and an update of the pending
// pod itself (its annotations corrected).
func (pl *JobZone) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{
			Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint},
		},
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete},
			QueueingHintFn: pl.isSchedulableAfterPodDelete,
		},
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update},
			QueueingHintFn: pl.isSchedulableAfterPodUpdate,
		},
	}, nil
}

// isSchedulableAfterPodDelete returns Queue for a member of the same job (the job is
// planned again) and for a pod that held GPUs (a zone may now hold the job).
func (pl *JobZone) isSchedulableAfterPodDelete(logger klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	deleted, _, err := util.As[*v1.Pod](oldObj, nil)
	if err != nil {
		return fwk.Queue, err
	}
	if job, err := zonepolicy.JobFromPod(pod, pl.config.zone); err == nil && job != nil && isMember(deleted, pod.Namespace, job, pl.config.zone) {
		return fwk.Queue, nil
	}
	requests := resourcehelper.PodRequests(deleted, resourcehelper.PodResourcesOptions{})
	if gpus := requests[pl.config.gpu.GPUResource]; gpus.Sign() > 0 {
		return fwk.Queue, nil
	}
	logger.V(5).Info("deleted pod held no GPUs and is not in the pod's job", "pod", klog.KObj(pod), "deleted", klog.KObj(deleted))
	return fwk.QueueSkip, nil
}

// isSchedulableAfterPodUpdate returns Queue when the pending pod itself was updated.
func (pl *JobZone) isSchedulableAfterPodUpdate(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	_, updated, err := util.As[*v1.Pod](nil, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if updated == nil || updated.UID != pod.UID {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
