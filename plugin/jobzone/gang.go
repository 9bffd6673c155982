package jobzone

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// gang is a job with members held at Permit: the zone they were reserved in, when
// the job's time runs out, and when each member began to wait with how many GPUs.
type gang struct {
	zone     string
	deadline time.Time
	held     map[types.UID]heldMember
}

type heldMember struct {
	since time.Time
	gpus  int64
}

// gpuSeconds is how many GPU-seconds the held members have kept from other pods by now.
func (g *gang) gpuSeconds(now time.Time) float64 {
	total := 0.0
	for _, m := range g.held {
		total += float64(m.gpus) * now.Sub(m.since).Seconds()
	}
	return total
}

// Reserve does nothing: a member's place is the scheduler cache's assumed pod, which
// PreFilter and Permit read back from the snapshot.
func (pl *JobZone) Reserve(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status { return nil }

// Permit lets a pod in no job through. A member waits until job-size members (itself,
// the members held, and those already bound) are in the zone of its node; the member
// that completes the job releases every held one, once it has checked that each held
// member's node still stands (else the whole job is rejected and placed again). The wait ends at the job's
// deadline, permitTimeout after its first member began to wait.
func (pl *JobZone) Permit(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) (*fwk.Status, time.Duration) {
	job := pl.jobOf(state, pod)
	if job == nil {
		return nil, 0
	}
	info, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: node %q: %w", Name, nodeName, err)), 0
	}
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return fwk.AsStatus(err), 0
	}
	zone := zoneOf(info.Node(), pl.config.zone)
	placed := int64(1) + membersIn(nodes, pod, job, zone, pl.config.zone)
	key := jobKey(pod, job)
	logger := klog.FromContext(ctx)
	now := pl.clock.Now()

	pl.mu.Lock()
	g := pl.gangs[key]
	if placed >= job.Size {
		delete(pl.gangs, key)
		pl.release(key)
		pl.mu.Unlock()
		if message := pl.heldNodesTaken(pod, job, key); message != "" {
			logger.V(2).Info("a held member's node was taken away; the job is placed again", "job", key, "why", message)
			pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
				if isMember(wp.GetPod(), pod.Namespace, job, pl.config.zone) {
					wp.Reject(Name, message)
				}
			})
			holdEnded(g, HoldRejected, now)
			return fwk.NewStatus(fwk.Unschedulable, message), 0
		}
		pl.order.markPlaced(key)
		holdEnded(g, HoldReleased, now)
		if g != nil {
			logger.V(2).Info("job placed whole; releasing its held members", "job", key, "size", job.Size,
				"zone", zone, "gpuSecondsHeld", g.gpuSeconds(now))
		}
		pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
			if isMember(wp.GetPod(), pod.Namespace, job, pl.config.zone) {
				wp.Allow(Name)
			}
		})
		return nil, 0
	}
	if g == nil {
		g = &gang{zone: zone, deadline: now.Add(pl.config.permitTimeout), held: map[types.UID]heldMember{}}
		pl.gangs[key] = g
		JobsHeld.Inc()
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	gpus := requests[pl.config.gpu.GPUResource]
	g.held[pod.UID] = heldMember{since: now, gpus: gpus.Value()}
	wait := max(g.deadline.Sub(now), time.Millisecond)
	pl.mu.Unlock()
	return fwk.NewStatus(fwk.Wait, fmt.Sprintf(WaitingFormat, placed, job.Size, key, zone)), wait
}

// heldNodesTaken checks, before a completed job is let through, that every held member's
// node still stands for it in the snapshot; the rejection message when one does not, else "".
func (pl *JobZone) heldNodesTaken(self *v1.Pod, job *zonepolicy.Job, key string) string {
	message := ""
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		held := wp.GetPod()
		if message != "" || !isMember(held, self.Namespace, job, pl.config.zone) {
			return
		}
		var node *v1.Node
		if info, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(held.Spec.NodeName); err == nil {
			node = info.Node()
		}
		if why := takenFrom(node, held); why != "" {
			message = fmt.Sprintf(NodeTakenFormat, key, held.Spec.NodeName, klog.KObj(held), why)
		}
	})
	return message
}

// membersIn counts the job's placed members (bound or assumed, not terminating) on nodes
// of zone, self left out.
func membersIn(nodes []fwk.NodeInfo, self *v1.Pod, job *zonepolicy.Job, zone string, s zonepolicy.Settings) int64 {
	var count int64
	for _, info := range nodes {
		if zoneOf(info.Node(), s) != zone {
			continue
		}
		for _, podInfo := range info.GetPods() {
			if p := podInfo.GetPod(); p.UID != self.UID && isPlacedMember(p, self.Namespace, job, s) {
				count++
			}
		}
	}
	return count
}

// Unreserve ends the job's wait when one of its members is given up: every other
// held member is rejected, so none binds without the rest. When the job's time ran
// out, its zone is skipped for the job for failedZoneDuration and its pending
// members are moved to the active queue to be planned again at once.
func (pl *JobZone) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ string) {
	job := pl.jobOf(state, pod)
	if job == nil {
		return
	}
	key := jobKey(pod, job)
	now := pl.clock.Now()
	pl.mu.Lock()
	g := pl.gangs[key]
	if g == nil {
		pl.mu.Unlock()
		return
	}
	delete(pl.gangs, key)
	pl.release(key)
	timedOut := !now.Before(g.deadline)
	if timedOut {
		if pl.failed[key] == nil {
			pl.failed[key] = map[string]time.Time{}
		}
		pl.failed[key][g.zone] = now.Add(pl.config.failedZoneDuration)
	}
	pl.mu.Unlock()

	message := fmt.Sprintf(MemberUnreservedFormat, key, klog.KObj(pod))
	holdEnded(g, unreservedResult(timedOut), now)
	if timedOut {
		message = fmt.Sprintf(TimedOutFormat, key, job.Size, g.zone, pl.config.permitTimeout, pl.config.failedZoneDuration)
	}
	klog.FromContext(ctx).V(2).Info("job not placed whole; rejecting its held members", "job", key, "zone", g.zone,
		"timedOut", timedOut, "held", len(g.held), "gpuSecondsHeld", g.gpuSeconds(now))
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if p := wp.GetPod(); p.UID != pod.UID && isMember(p, pod.Namespace, job, pl.config.zone) {
			wp.Reject(Name, message)
		}
	})
	if timedOut {
		pl.activatePending(klog.FromContext(ctx), pod, job)
	}
}

// activatePending moves the job's pods that wait in the scheduling queue to the active
// queue, so the job is planned again now rather than at the next cluster event.
func (pl *JobZone) activatePending(logger klog.Logger, self *v1.Pod, job *zonepolicy.Job) {
	if pl.pods == nil {
		return
	}
	pods, err := pl.pods.Pods(self.Namespace).List(labels.SelectorFromSet(job.MatchLabels))
	if err != nil {
		logger.Error(err, "listing the job's pods", "job", job.Name)
		return
	}
	pending := map[string]*v1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.UID != self.UID && isMember(p, self.Namespace, job, pl.config.zone) {
			pending[p.Namespace+"/"+p.Name] = p
		}
	}
	if len(pending) > 0 {
		pl.handle.Activate(logger, pending)
	}
}
