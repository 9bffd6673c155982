package jobzone

import (
	"time"

	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// reservation is a planned job's hold on its zone: the GPUs of its members not yet
// placed there are counted as taken when another job is planned, so two jobs planned
// at once do not both count the same free GPUs and wait on each other.
type reservation struct {
	zone      string
	job       *zonepolicy.Job
	namespace string
	// gpus is what the whole job's members request in all.
	gpus int64
	// until is when the plan stops holding if no member of the job waits at Permit by
	// then (its members were deleted, or never got past the Filter plugins).
	until time.Time
}

// reserve records the job's plan; called by PreFilter for the member that planned it.
func (pl *JobZone) reserve(key, namespace, zone string, job *zonepolicy.Job, gpus int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.reservations[key] = reservation{
		zone: zone, job: job, namespace: namespace, gpus: gpus,
		until: pl.clock.Now().Add(pl.config.permitTimeout),
	}
}

// release ends the job's hold on its zone: the job was placed whole, or is given up.
// The caller holds pl.mu.
func (pl *JobZone) release(key string) { delete(pl.reservations, key) }

// reservedByOthers is, zone by zone, how many GPUs other planned jobs still need there:
// each job's GPUs less those of its members placed in its zone. Expired plans of jobs
// with no member held are dropped.
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
		if outstanding := r.gpus - placedGPUsIn(nodes, r.namespace, r.job, r.zone, pl.config); outstanding > 0 {
			reserved[r.zone] += outstanding
		}
	}
	return reserved
}

// placedGPUsIn is the GPUs the job's placed members (bound or assumed, not terminating)
// request in zone.
func placedGPUsIn(nodes []fwk.NodeInfo, namespace string, job *zonepolicy.Job, zone string, c config) int64 {
	var gpus int64
	for _, info := range nodes {
		if zoneOf(info.Node(), c.zone) != zone {
			continue
		}
		for _, podInfo := range info.GetPods() {
			if pod := podInfo.GetPod(); isPlacedMember(pod, namespace, job, c.zone) {
				requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
				quantity := requests[c.gpu.GPUResource]
				gpus += quantity.Value()
			}
		}
	}
	return gpus
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
