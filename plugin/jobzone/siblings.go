package jobzone

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// SiblingsFormat is PreFilter's refusal of a member of a job not yet placed while fewer
// than job-size members exist: job, members that exist, job size (Coscheduling's "cannot
// find enough sibling pods").
const SiblingsFormat = "job %s: waiting for %d of %d members to exist; none is placed until all are"

// WaitingForMembersReason is the reason of the event a member gets when PreEnqueue keeps it
// out of the scheduling queue until its job's members all exist (its message: SiblingsFormat).
const WaitingForMembersReason = "WaitingForMembers"

// existingMembers counts the job's members that exist and are not being deleted: self and
// every pod of the job in the scheduler's pod informer, which holds no Succeeded or Failed
// pod. It reads the informer's store, which is updated before any event handler (the
// scheduling queue's included) hears of a pod, so a member created just before self was
// queued is counted. -1 when there is no pod lister (no informer): the job is not gated.
func existingMembers(pods corelisters.PodLister, self *v1.Pod, job *zonepolicy.Job, s zonepolicy.Settings) (int64, error) {
	count, _, err := countMembers(pods, self, job, s)
	return count, err
}

// countMembers is existingMembers, and whether any of the others is bound.
func countMembers(pods corelisters.PodLister, self *v1.Pod, job *zonepolicy.Job, s zonepolicy.Settings) (int64, bool, error) {
	if pods == nil {
		return -1, false, nil
	}
	listed, err := pods.Pods(self.Namespace).List(labels.SelectorFromSet(job.MatchLabels))
	if err != nil {
		return 0, false, err
	}
	count, bound := int64(1), false
	for _, pod := range listed {
		if pod.UID != self.UID && isPlacedMember(pod, self.Namespace, job, s) {
			count++
			bound = bound || pod.Spec.NodeName != ""
		}
	}
	return count, bound, nil
}

// waitingForSiblings is the sibling gate PreEnqueue applies before a member enters the active
// queue: a refusal while the job has no member placed (none bound in the informer, none placed
// by this scheduler) and fewer than job-size members exist; nil otherwise. Errors in the pod's
// job are left to PreFilter, which reports them on the pod. A pod kept out of the queue costs no
// scheduling attempt and no status write (kube-scheduler records no status for a PreEnqueue
// refusal; the pod gets a WaitingForMembersReason event instead, through the scheduler's
// event broadcaster), so a job whose members are created over time costs one attempt a member
// once it is complete; activateWhenComplete lets the others in.
func (pl *JobZone) waitingForSiblings(pod *v1.Pod) *fwk.Status {
	job, err := pl.jobFromPod(pod)
	if err != nil || job == nil || pl.order.wasPlaced(jobKey(pod, job)) {
		return nil
	}
	exist, bound, err := countMembers(pl.pods, pod, job, pl.config.zone)
	if err != nil || bound || exist < 0 || exist >= job.Size {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(SiblingsFormat, jobKey(pod, job), exist, job.Size))
}

// activateWhenComplete sends a job's members waiting for their siblings back to the active
// queue when a new pending member makes the job complete. kube-scheduler requeues pods
// rejected at PreFilter on cluster events, and the creation of an unscheduled pod is not
// one (without the alpha GangScheduling gate), so without this they would wait for an
// unrelated event or the unschedulable-pods flush (5 minutes).
func (pl *JobZone) activateWhenComplete(pod *v1.Pod) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	job, err := pl.jobFromPod(pod)
	if err != nil || job == nil || pl.order.wasPlaced(jobKey(pod, job)) {
		return
	}
	logger := klog.Background().WithValues("plugin", Name)
	exist, err := existingMembers(pl.pods, pod, job, pl.config.zone)
	if err != nil {
		logger.Error(err, "counting the job's members", "job", jobKey(pod, job))
		return
	}
	if exist >= job.Size {
		pl.activateMembers(logger, pod.Namespace, job, pod.UID)
	}
}
