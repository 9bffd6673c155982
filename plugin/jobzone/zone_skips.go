package jobzone

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// A zone is skipped for a job after the job was given up there, so the retry plans elsewhere
// instead of trying the same zone again at once. Two causes, two ends:
//
//   - The job's time ran out (permitTimeout): the skip lasts failedZoneDuration. What kept
//     the members away is not known, so no event can say it has gone.
//   - No node of the zone passed the filters for a member (PostFilter): something took the
//     room the plan counted on, often a pod outside any job that the plan does not reserve
//     against. The skip ends as soon as room frees in the zone (a pod placed there is
//     deleted; a node there is added, its allocatable or taints change, or it is uncordoned),
//     and at failedZoneDuration at the latest.
//
// Whenever a skip ends, the job's members are sent back to the active queue: no cluster event
// of the scheduler's own says that the job may now be planned in that zone.

// roomSkip is a job whose skip of a zone ends when room frees there: what requeues it.
type roomSkip struct {
	namespace string
	job       *zonepolicy.Job
}

// skipZoneLocked marks zone as skipped for the job for failedZoneDuration (untilRoom: or
// until room frees in the zone), and sets a timer that requeues the job's members when the
// skip's time ends. The caller holds pl.mu.
func (pl *JobZone) skipZoneLocked(logger klog.Logger, key, namespace string, job *zonepolicy.Job, zone string, now time.Time, untilRoom bool) {
	if pl.failed[key] == nil {
		pl.failed[key] = map[string]time.Time{}
	}
	pl.failed[key][zone] = now.Add(pl.config.failedZoneDuration)
	if untilRoom {
		if pl.roomSkips[zone] == nil {
			pl.roomSkips[zone] = map[string]roomSkip{}
		}
		pl.roomSkips[zone][key] = roomSkip{namespace: namespace, job: job}
	} else if pl.roomSkips[zone] != nil {
		delete(pl.roomSkips[zone], key)
	}
	pl.clock.AfterFunc(pl.config.failedZoneDuration, func() {
		go func() {
			logger.V(3).Info("a zone's skip for a job ended; requeueing its members", "job", key, "zone", zone)
			pl.activateMembers(logger, namespace, job, "")
		}()
	})
}

// failedZones is the set of zones skipped for the job now (expired skips are dropped).
func (pl *JobZone) failedZones(key string) map[string]bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	now := pl.clock.Now()
	zones := map[string]bool{}
	for zone, until := range pl.failed[key] {
		if now.Before(until) {
			zones[zone] = true
			continue
		}
		delete(pl.failed[key], zone)
		if pl.roomSkips[zone] != nil {
			delete(pl.roomSkips[zone], key)
		}
	}
	if len(pl.failed[key]) == 0 {
		delete(pl.failed, key)
	}
	return zones
}

// endRoomSkips ends every skip of zone that waits for room there, and requeues those jobs'
// members.
func (pl *JobZone) endRoomSkips(logger klog.Logger, zone, why string) {
	if zone == "" {
		return
	}
	pl.mu.Lock()
	skips := pl.roomSkips[zone]
	delete(pl.roomSkips, zone)
	for key := range skips {
		if pl.failed[key] != nil {
			delete(pl.failed[key], zone)
		}
	}
	pl.mu.Unlock()
	for key, skip := range skips {
		logger.V(2).Info("room freed in a zone a job was refused in; the job is planned again", "job", key, "zone", zone, "why", why)
		pl.activateMembers(logger, skip.namespace, skip.job, "")
	}
}

// podLeft ends the room skips of the zone of a deleted pod's node.
func (pl *JobZone) podLeft(logger klog.Logger, pod *v1.Pod) {
	if pod.Spec.NodeName == "" {
		return
	}
	pl.endRoomSkips(logger, zoneOf(pl.currentNode(pod.Spec.NodeName), pl.config.zone), "pod "+klog.KObj(pod).String()+" deleted")
}

// nodeGainedRoom reports whether a node's change can let more pods onto it: it is new (old
// nil), or its allocatable, its taints or its zone (zoneLabel) changed, or it was uncordoned.
func nodeGainedRoom(old, node *v1.Node, zoneLabel string) bool {
	if old == nil {
		return true
	}
	return old.Spec.Unschedulable && !node.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, node.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, node.Spec.Taints) ||
		old.Labels[zoneLabel] != node.Labels[zoneLabel]
}
