package jobzone

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// PreemptedFormat is the rejection of every held member of a job when preemption took one of
// them: job, the member, the preemptor.
const PreemptedFormat = "job %s: member %s was preempted by %s; the job is placed again"

// deadlineGrace is how long after a job's deadline kube-scheduler's own Permit timer would
// reject a held member. JobZone ends the hold itself at the deadline, under its lock, so the
// framework's timer never rejects one member while the job completes; the grace only keeps
// a member from waiting for ever should JobZone's timer not run.
const deadlineGrace = 5 * time.Second

// holdKey is where Permit leaves, for Unreserve, the generation of the hold the member joined.
const holdKey fwk.StateKey = "Permit" + Name

// holdState is the generation of the hold a member joined at Permit.
type holdState struct{ generation uint64 }

// Clone returns the state itself: it never changes.
func (s *holdState) Clone() fwk.StateData { return s }

// heldGeneration is the generation of the hold the member joined at Permit; 0 when it was
// never held (it failed before Permit, or completed its job).
func heldGeneration(state fwk.CycleState) uint64 {
	if state == nil {
		return 0
	}
	data, err := state.Read(holdKey)
	if err != nil {
		return 0
	}
	if s, ok := data.(*holdState); ok {
		return s.generation
	}
	return 0
}

// newHoldLocked starts a hold for the job in zone, with a generation no earlier hold had, and
// a timer that ends it at its deadline. The caller holds pl.mu.
func (pl *JobZone) newHoldLocked(logger klog.Logger, key, zone string, self *v1.Pod, job *zonepolicy.Job, now time.Time) *gang {
	pl.generation++
	g := &gang{zone: zone, generation: pl.generation, deadline: now.Add(pl.config.permitTimeout), held: map[types.UID]heldMember{}}
	pl.gangs[key] = g
	JobsHeld.Inc()
	namespace, generation := self.Namespace, g.generation
	// The timer's function runs apart from the clock's (a test clock calls it under its own lock).
	pl.clock.AfterFunc(pl.config.permitTimeout, func() { go pl.expireHold(logger, key, namespace, job, generation) })
	return g
}

// expireHold ends the job's hold of the given generation when its deadline has come and it
// is still open: every held member is rejected, the zone is skipped for the job for
// failedZoneDuration and the job's members are requeued. A later hold of the same job is
// left alone.
func (pl *JobZone) expireHold(logger klog.Logger, key, namespace string, job *zonepolicy.Job, generation uint64) {
	now := pl.clock.Now()
	pl.mu.Lock()
	g := pl.gangs[key]
	if g == nil || g.generation != generation {
		pl.mu.Unlock()
		return
	}
	pl.skipZoneLocked(logger, key, namespace, job, g.zone, now, false)
	message := fmt.Sprintf(TimedOutFormat, key, job.Size, g.zone, pl.config.permitTimeout, pl.config.failedZoneDuration)
	pl.endHoldLocked(key, namespace, job, g, message, HoldTimedOut, now)
	pl.mu.Unlock()
	logger.V(2).Info("job not placed whole in time; rejecting its held members", "job", key, "zone", g.zone,
		"held", len(g.held), "gpuSecondsHeld", g.gpuSeconds(now))
	pl.activateMembers(logger, namespace, job, "")
}

// endHoldLocked ends the job's hold (g may be nil: no member held): the hold and the plan's
// reservation are dropped and every member of the job waiting at Permit is rejected with
// message under JobZone's name, which its queueing hints answer. Each rejected member is
// remembered until its Unreserve, so neither that late Unreserve nor a completion counts it.
// The caller holds pl.mu, so no member is let through in between; it then requeues the
// members (activateMembers).
func (pl *JobZone) endHoldLocked(key, namespace string, job *zonepolicy.Job, g *gang, message, result string, now time.Time) {
	if g != nil && pl.gangs[key] == g {
		delete(pl.gangs, key)
	}
	pl.release(key)
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if p := wp.GetPod(); isMember(p, namespace, job, pl.config.zone) && waitsOnJobZone(wp) {
			pl.released[p.UID] = struct{}{}
			wp.Reject(Name, message)
		}
	})
	holdEnded(g, result, now)
}

// waitsOnJobZone reports whether JobZone has not let the waiting pod through yet (a member let
// through by a completion may still be in the framework's waiting pods until it reads that).
func waitsOnJobZone(wp fwk.WaitingPod) bool {
	for _, plugin := range wp.GetPendingPlugins() {
		if plugin == Name {
			return true
		}
	}
	return false
}

// activateMembers sends the job's members that are not bound (pending in the scheduling queue,
// or held at Permit and being rejected) to the active queue, except the one named skip: a
// member in the queue's unschedulable pool moves now, and one still in its cycle is requeued
// as soon as it fails, whichever plugin rejected it, instead of waiting for a cluster event
// or the queue's periodic flush.
func (pl *JobZone) activateMembers(logger klog.Logger, namespace string, job *zonepolicy.Job, skip types.UID) {
	if pl.pods == nil {
		return
	}
	pods, err := pl.pods.Pods(namespace).List(labels.SelectorFromSet(job.MatchLabels))
	if err != nil {
		logger.Error(err, "listing the job's pods", "job", job.Name)
		return
	}
	pending := map[string]*v1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" && p.UID != skip && isMember(p, namespace, job, pl.config.zone) {
			pending[p.Namespace+"/"+p.Name] = p
		}
	}
	if len(pending) > 0 {
		pl.handle.Activate(logger, pending)
	}
}
