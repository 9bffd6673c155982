package jobzone

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// Status messages of PostFilter.
const (
	// ZoneRefusedFormat is the rejection of a job's held members, and the member's own
	// message, when no node of the job's zone passed the filters for a member: job, zone,
	// failedZoneDuration (the longest the skip lasts: it ends when room frees in the zone).
	ZoneRefusedFormat = "job %s: no node in zone %s passed the scheduler's filters for a member; the zone is skipped for this job until room frees there (at most %s) and the job is planned again"
	// BoundZoneFullFormat is the member's message when no node of its zone passed the
	// filters but members are already bound there, so the job cannot move: job, zone.
	BoundZoneFullFormat = "job %s: no node in zone %s passed the scheduler's filters for this member, and members are bound there"
)

var _ fwk.PostFilterPlugin = &JobZone{}

// PostFilter runs when no node passed the filters for a pod. For a member of a job planned
// in a zone (the plan cannot see every filter: host ports, volumes, pod anti-affinity), it
// does not leave the job's held members waiting for permitTimeout: the zone is skipped for
// the job for failedZoneDuration, the plan's hold is released, every held member is
// rejected, and the job's pending pods, this one too, are sent back to the active queue to be
// planned elsewhere now. The job preempts nothing for one member (Coscheduling's all or
// nothing): the status is UnschedulableAndUnresolvable and no victim is looked for.
// A member whose job already has members bound in its zone cannot move; preemption may make
// room for it in that zone, as for any pod. A pod in no job goes to preemption too
// (preemption.go).
func (pl *JobZone) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	data, err := state.Read(stateKey)
	if err != nil {
		return pl.preempt(ctx, state, pod, m, "")
	}
	s, ok := data.(*jobState)
	if !ok || s.job == nil {
		return pl.preempt(ctx, state, pod, m, "")
	}
	if s.zone == "" {
		// PreFilter found no zone for the job (its message says why): the job preempts as a
		// whole, or not at all (gang_preemption.go).
		return pl.preemptForJob(ctx, pod, s.job)
	}
	key := jobKey(pod, s.job)
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if pl.boundIn(nodes, pod, s.job, s.zone) > 0 {
		return pl.preempt(ctx, state, pod, m, fmt.Sprintf(BoundZoneFullFormat, key, s.zone))
	}
	now := pl.clock.Now()
	logger := klog.FromContext(ctx)
	message := fmt.Sprintf(ZoneRefusedFormat, key, s.zone, pl.config.failedZoneDuration)
	pl.mu.Lock()
	g := pl.gangs[key]
	pl.skipZoneLocked(logger, key, pod.Namespace, s.job, s.zone, now, true)
	pl.endHoldLocked(key, pod.Namespace, s.job, g, message, HoldRejected, now)
	pl.mu.Unlock()

	held, gpuSeconds := 0, 0.0
	if g != nil {
		held, gpuSeconds = len(g.held), g.gpuSeconds(now)
	}
	logger.V(2).Info("no node in the job's zone passed the filters; the job is planned again", "job", key,
		"zone", s.zone, "member", klog.KObj(pod), "held", held, "gpuSecondsHeld", gpuSeconds)
	pl.activateMembers(logger, pod.Namespace, s.job, pod.UID)
	// The pod itself is still in its scheduling cycle: activating it makes the queue send it
	// back after its backoff instead of waiting for a cluster event.
	pl.handle.Activate(logger, map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod})
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, message)
}

// boundIn counts the job's members placed in zone that are not held at Permit (bound, or
// let through and binding): those cannot be moved to another zone.
func (pl *JobZone) boundIn(nodes []fwk.NodeInfo, self *v1.Pod, job *zonepolicy.Job, zone string) int64 {
	var count int64
	for _, info := range nodes {
		if zoneOf(info.Node(), pl.config.zone) != zone {
			continue
		}
		for _, podInfo := range info.GetPods() {
			p := podInfo.GetPod()
			if p.UID != self.UID && isPlacedMember(p, self.Namespace, job, pl.config.zone) && pl.handle.GetWaitingPod(p.UID) == nil {
				count++
			}
		}
	}
	return count
}
