package jobzone

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// gang is a job's hold at Permit: the zone its members were reserved in, the hold's
// generation (no two holds share one, so a late event of an ended hold cannot end a new one),
// when the job's time runs out, and when each held member began to wait with how many GPUs.
type gang struct {
	zone       string
	generation uint64
	deadline   time.Time
	held       map[types.UID]heldMember
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

// Permit lets a pod in no job through. A member waits until job-size members are placed in
// the zone of its node: itself, the members of the job's hold that still wait at Permit, and
// those bound or let through before. The count, the check that every one of those members'
// nodes still stands, and the decision are made under the plugin's lock, which every path
// that ends a hold also takes; the member that completes the job lets every held member
// through in that same decision, or, when a node was taken away, rejects them all. The wait
// ends at the job's deadline, permitTimeout after its first member began to wait, when
// JobZone's own timer ends the hold (hold.go).
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
	key := jobKey(pod, job)
	logger := klog.FromContext(ctx)
	now := pl.clock.Now()

	pl.mu.Lock()
	g := pl.gangs[key]
	held := pl.stillHeldLocked(g, pod.UID)
	placed := int64(1+len(held)) + pl.placedBeforeLocked(nodes, pod, job, zone, g)
	if placed >= job.Size {
		if message := pl.nodesTaken(pod, nodeName, held, key); message != "" {
			pl.released[pod.UID] = struct{}{}
			pl.endHoldLocked(key, pod.Namespace, job, g, message, HoldRejected, now)
			pl.mu.Unlock()
			logger.V(2).Info("a member's node was taken away; the job is placed again", "job", key, "why", message)
			pl.activateMembers(logger, pod.Namespace, job, "")
			return fwk.NewStatus(fwk.Unschedulable, message), 0
		}
		if g != nil {
			delete(pl.gangs, key)
		}
		pl.release(key)
		for _, wp := range held {
			wp.Allow(Name)
		}
		pl.order.markPlaced(key)
		holdEnded(g, HoldReleased, now)
		pl.mu.Unlock()
		if g != nil {
			logger.V(2).Info("job placed whole; released its held members", "job", key, "size", job.Size,
				"zone", zone, "gpuSecondsHeld", g.gpuSeconds(now))
		}
		return nil, 0
	}
	if g == nil {
		g = pl.newHoldLocked(logger, key, zone, pod, job, now)
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	gpus := requests[pl.config.gpu.GPUResource]
	g.held[pod.UID] = heldMember{since: now, gpus: gpus.Value()}
	state.Write(holdKey, &holdState{generation: g.generation})
	wait := max(g.deadline.Sub(now), time.Millisecond) + deadlineGrace
	pl.mu.Unlock()
	return fwk.NewStatus(fwk.Wait, fmt.Sprintf(WaitingFormat, placed, job.Size, key, zone)), wait
}

// stillHeldLocked is the hold's members other than self that still wait at Permit, were not
// rejected by JobZone and are not being deleted, read from the framework's waiting pods and the
// pod informer now rather than from the cycle's snapshot. The caller holds pl.mu.
func (pl *JobZone) stillHeldLocked(g *gang, self types.UID) []fwk.WaitingPod {
	if g == nil {
		return nil
	}
	var held []fwk.WaitingPod
	for uid := range g.held {
		if _, rejected := pl.released[uid]; rejected || uid == self {
			continue
		}
		if wp := pl.handle.GetWaitingPod(uid); wp != nil && pl.exists(wp.GetPod()) {
			held = append(held, wp)
		}
	}
	return held
}

// exists reports whether the pod informer still has the pod, not being deleted (true without
// an informer). The informer's store changes before kube-scheduler rejects a deleted pod that
// waits at Permit, so a member deleted while it waited is not counted.
func (pl *JobZone) exists(pod *v1.Pod) bool {
	if pl.pods == nil {
		return true
	}
	current, err := pl.pods.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && current.UID == pod.UID && current.DeletionTimestamp == nil
}

// nodesTaken checks, before a completed job is let through, that the completing member's node
// and every held member's node still stand for it, read from the node informer (the cycle's
// snapshot without one); the rejection message when one does not, else "".
func (pl *JobZone) nodesTaken(self *v1.Pod, nodeName string, held []fwk.WaitingPod, key string) string {
	if why := takenFrom(pl.currentNode(nodeName), self); why != "" {
		return fmt.Sprintf(NodeTakenFormat, key, nodeName, klog.KObj(self), why)
	}
	for _, wp := range held {
		member := wp.GetPod()
		if why := takenFrom(pl.currentNode(member.Spec.NodeName), member); why != "" {
			return fmt.Sprintf(NodeTakenFormat, key, member.Spec.NodeName, klog.KObj(member), why)
		}
	}
	return ""
}

// currentNode is the named node as the node informer has it now, or as the cycle's snapshot
// has it without an informer; nil when it does not exist.
func (pl *JobZone) currentNode(name string) *v1.Node {
	if pl.nodes != nil {
		node, err := pl.nodes.Get(name)
		if err != nil {
			return nil
		}
		return node
	}
	info, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(name)
	if err != nil {
		return nil
	}
	return info.Node()
}

// placedBeforeLocked counts the job's members in zone that are bound or were let through:
// placed in the cycle's snapshot (bound or assumed, not terminating), other than self, not
// waiting at Permit, not of the current hold g (counted live) and not rejected by JobZone. The
// caller holds pl.mu.
func (pl *JobZone) placedBeforeLocked(nodes []fwk.NodeInfo, self *v1.Pod, job *zonepolicy.Job, zone string, g *gang) int64 {
	var count int64
	for _, info := range nodes {
		if zoneOf(info.Node(), pl.config.zone) != zone {
			continue
		}
		for _, podInfo := range info.GetPods() {
			p := podInfo.GetPod()
			if p.UID == self.UID || !isPlacedMember(p, self.Namespace, job, pl.config.zone) || pl.handle.GetWaitingPod(p.UID) != nil {
				continue
			}
			if _, rejected := pl.released[p.UID]; rejected {
				continue
			}
			if g != nil {
				if _, held := g.held[p.UID]; held {
					continue
				}
			}
			count++
		}
	}
	return count
}

// Unreserve ends the job's hold when one of its members is given up, so none binds without
// the rest: every other held member is rejected and the job's members are requeued. It acts
// only on the hold the member belongs to: a member JobZone already rejected, or one of an
// earlier hold (its generation, recorded at Permit, is not the current hold's), changes
// nothing more. When the job's time ran out, its zone is skipped for the job for
// failedZoneDuration. In every case the member's nomination of the node is cleared
// (nominations.go), so an autoscaler sees the member again.
func (pl *JobZone) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	job := pl.jobOf(state, pod)
	if job == nil {
		return
	}
	key := jobKey(pod, job)
	logger := klog.FromContext(ctx)
	pl.clearNomination(logger, pod, nodeName)
	now := pl.clock.Now()
	pl.mu.Lock()
	_, rejected := pl.released[pod.UID]
	delete(pl.released, pod.UID)
	g := pl.gangs[key]
	generation := heldGeneration(state)
	if rejected || g == nil || (generation != 0 && generation != g.generation) {
		pl.mu.Unlock()
		return
	}
	timedOut := !now.Before(g.deadline)
	message := fmt.Sprintf(MemberUnreservedFormat, key, klog.KObj(pod))
	if timedOut {
		pl.skipZoneLocked(logger, key, pod.Namespace, job, g.zone, now, false)
		message = fmt.Sprintf(TimedOutFormat, key, job.Size, g.zone, pl.config.permitTimeout, pl.config.failedZoneDuration)
	}
	pl.endHoldLocked(key, pod.Namespace, job, g, message, unreservedResult(timedOut), now)
	delete(pl.released, pod.UID)
	pl.mu.Unlock()

	logger.V(2).Info("job not placed whole; rejected its held members", "job", key, "zone", g.zone,
		"timedOut", timedOut, "held", len(g.held), "gpuSecondsHeld", g.gpuSeconds(now))
	pl.activateMembers(logger, pod.Namespace, job, "")
}
