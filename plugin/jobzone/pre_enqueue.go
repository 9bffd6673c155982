package jobzone

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.PreEnqueuePlugin = &JobZone{}

// PreEnqueue keeps a member of a job out of the queue while the job waits for its members
// (siblings.go), and a pod while its asynchronous preemption is still evicting victims, as
// DefaultPreemption's does.
func (pl *JobZone) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if status := pl.waitingForSiblings(pod); status != nil {
		if recorder := pl.handle.EventRecorder(); recorder != nil {
			recorder.Eventf(pod, nil, v1.EventTypeNormal, WaitingForMembersReason, "Scheduling", "%s", status.Message())
		}
		return status
	}
	if pl.preemption == nil {
		return nil
	}
	return pl.preemption.PreEnqueue(ctx, pod)
}
