package jobzone

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// EventsToRegister names the cluster events that can undo this plugin's rejection: a
// Node added or changed (new room, a zone label), an assigned pod deleted (GPUs freed,
// or a member given up so the job is planned again), an update of the pending pod
// itself (its annotations corrected), and a Job added or changed (an Indexed Job's size
// is read from it); and DefaultPreemption's, for the pods its PreEnqueue keeps out of the
// queue while their victims are evicted.
func (pl *JobZone) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	var preemption []fwk.ClusterEventWithHint
	if pl.preemption != nil {
		var err error
		if preemption, err = pl.preemption.EventsToRegister(ctx); err != nil {
			return nil, err
		}
	}
	return append([]fwk.ClusterEventWithHint{
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
		{
			Event:          fwk.ClusterEvent{Resource: jobsResource, ActionType: fwk.Add | fwk.Update},
			QueueingHintFn: pl.isSchedulableAfterJobChange,
		},
	}, preemption...), nil
}

// jobsResource is batch/v1 Jobs as kube-scheduler names a resource it watches for a plugin.
const jobsResource fwk.EventResource = "jobs.v1.batch"

// isSchedulableAfterJobChange returns Queue for a pod of the Indexed Job that was added
// or changed (its size is read from the Job).
func (pl *JobZone) isSchedulableAfterJobChange(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	changed, err := meta.Accessor(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	job, err := pl.declaredJob(pod)
	if err != nil || job == nil || job.SizeFrom != zonepolicy.SizeFromCompletions || changed.GetNamespace() != pod.Namespace ||
		job.MatchLabels[job.NameLabel] != changed.GetName() {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// isSchedulableAfterPodDelete returns Queue for a member of the same job (the job is
// planned again) and for a pod that held GPUs (a zone may now hold the job).
func (pl *JobZone) isSchedulableAfterPodDelete(logger klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	deleted, _, err := util.As[*v1.Pod](oldObj, nil)
	if err != nil {
		return fwk.Queue, err
	}
	if job, err := pl.declaredJob(pod); err == nil && job != nil && isMember(deleted, pod.Namespace, job, pl.config.zone) {
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
