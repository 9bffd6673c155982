package jobzone

import (
	"time"

	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// reservation is a planned job's hold on its zone: the GPUs of its members not yet
// placed there are counted as taken when another job is planned, so two jobs planned
// at once do not both count the same free GPUs and wait on each other.
type reservation struct {
	zone          string
	job           *zonepolicy.Job
	namespace     string
	gpusPerMember int64
	// until is when the plan stops holding if no member of the job waits at Permit by
	// then (its members were deleted, or never got past the Filter plugins).
	until time.Time
}

// reserve records the job's plan; called by PreFilter for the member that planned it.
func (pl *JobZone) reserve(key, namespace, zone string, job *zonepolicy.Job, gpusPerMember int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.reservations[key] = reservation{
		zone: zone, job: job, namespace: namespace, gpusPerMember: gpusPerMember,
		until: pl.clock.Now().Add(pl.config.permitTimeout),
	}
}

// release ends the job's hold on its zone: the job was placed whole, or is given up.
// The caller holds pl.mu.
func (pl *JobZone) release(key string) { delete(pl.reservations, key) }

// reservedByOthers is, zone by zone, how many GPUs other planned jobs still need there:
// each job's members not yet placed in its zone, times the GPUs of one member. Expired
// plans of jobs with no member held are dropped.
func (pl *JobZone) reservedByOthers(key string, nodes []fwk.NodeInfo) map[string]int64 {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	now := pl.clock.Now()
	reserved := map[string]int64{}
	for other, r := range pl.reservations {
		if other == key {
			continue
		}
		if _, held := pl.gangs[other]; !held && !now.Before(r.until) {
			delete(pl.reservations, other)
			continue
		}
		outstanding := r.job.Size - placedIn(nodes, r.namespace, r.job, r.zone, pl.config.zone)
		if outstanding > 0 {
			reserved[r.zone] += outstanding * r.gpusPerMember
		}
	}
	return reserved
}

// placedIn counts the job's placed members (bound or assumed, not terminating) in zone.
func placedIn(nodes []fwk.NodeInfo, namespace string, job *zonepolicy.Job, zone string, s zonepolicy.Settings) int64 {
	var count int64
	for _, info := range nodes {
		if zoneOf(info.Node(), s) != zone {
			continue
		}
		for _, podInfo := range info.GetPods() {
			if isPlacedMember(podInfo.GetPod(), namespace, job, s) {
				count++
			}
		}
	}
	return count
}

// withoutReserved takes from each zone's copies of a pod of gpus GPUs those the GPUs
// other jobs reserved there would hold (rounded up: a reserved GPU short of a whole copy
// still takes the copy).
func withoutReserved(copies, reserved map[string]int64, gpus int64) map[string]int64 {
	if gpus <= 0 || len(reserved) == 0 {
		return copies
	}
	left := make(map[string]int64, len(copies))
	for zone, count := range copies {
		left[zone] = max(0, count-(reserved[zone]+gpus-1)/gpus)
	}
	return left
}
