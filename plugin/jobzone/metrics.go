package jobzone

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// JobZone's own metrics, on the scheduler's legacy registry beside kube-scheduler's, so
// gpu-scheduler's /metrics serves them (the CloudWatch dashboard and the jobsTimingOut alarm
// read them: render/metric_specs.py). Every label value below is set to zero at
// registration, so a series exists before its first event and a dashboard draws 0, not nothing.
const (
	metricsSubsystem = "scheduler_jobzone"

	// PlanResultLabel is the label of ZonePlans: PlanPlanned or PlanNoZone.
	PlanResultLabel = "result"
	// PlanPlanned is a plan that found a zone where the whole job fits.
	PlanPlanned = "planned"
	// PlanNoZone is a plan that found none (the member is unschedulable with every zone's count).
	PlanNoZone = "no_zone"

	// HoldResultLabel is the label of HoldsEnded and HeldGPUSeconds: how a hold at Permit ended.
	HoldResultLabel = "result"
	// HoldReleased is a job placed whole: its held members were let through to bind.
	HoldReleased = "released"
	// HoldTimedOut is a job whose members were not all placed within permitTimeout.
	HoldTimedOut = "timed_out"
	// HoldRejected is a job given up for another reason: no node of its zone passed the
	// filters for a member, a held member's node was taken away, or a member was unreserved.
	HoldRejected = "rejected"
)

var (
	// ZonePlans counts the zone plans PreFilter made for a job's first member, by result.
	ZonePlans = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "zone_plans_total",
		Help:           "Zone plans JobZone made for same-zone jobs, by result (planned: a zone holds the whole job; no_zone: none does).",
		StabilityLevel: metrics.ALPHA,
	}, []string{PlanResultLabel})
	// JobsHeld counts the jobs whose first member began to wait at Permit.
	JobsHeld = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "jobs_held_total",
		Help:           "Same-zone jobs JobZone began to hold at Permit (their first member waiting for the rest).",
		StabilityLevel: metrics.ALPHA,
	})
	// HoldsEnded counts the jobs whose hold at Permit ended, by how it ended.
	HoldsEnded = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "holds_ended_total",
		Help:           "Same-zone jobs whose hold at Permit ended, by result (released, timed_out, rejected).",
		StabilityLevel: metrics.ALPHA,
	}, []string{HoldResultLabel})
	// HeldGPUSeconds adds up, when a hold ends, the GPU-seconds its members kept from other
	// pods while they waited at Permit, by how the hold ended.
	HeldGPUSeconds = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "held_gpu_seconds_total",
		Help:           "GPU-seconds same-zone job members held at Permit, added when the hold ends, by its result.",
		StabilityLevel: metrics.ALPHA,
	}, []string{HoldResultLabel})

	registerMetrics sync.Once
)

// RegisterMetrics registers JobZone's metrics on the legacy registry once, each label value at zero.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(ZonePlans, JobsHeld, HoldsEnded, HeldGPUSeconds)
		for _, result := range []string{PlanPlanned, PlanNoZone} {
			ZonePlans.WithLabelValues(result)
		}
		for _, result := range []string{HoldReleased, HoldTimedOut, HoldRejected} {
			HoldsEnded.WithLabelValues(result)
			HeldGPUSeconds.WithLabelValues(result)
		}
	})
}

// countPlan records a zone plan's result.
func countPlan(found bool) {
	result := PlanNoZone
	if found {
		result = PlanPlanned
	}
	ZonePlans.WithLabelValues(result).Inc()
}

// holdEnded records how a job's hold ended and the GPU-seconds its members held until now;
// a job with no member held (nil) records nothing.
func holdEnded(g *gang, result string, now time.Time) {
	if g == nil {
		return
	}
	HoldsEnded.WithLabelValues(result).Inc()
	HeldGPUSeconds.WithLabelValues(result).Add(g.gpuSeconds(now))
}

// unreservedResult is how a hold ended when a member was unreserved: timed out when the job's
// deadline had passed, else rejected.
func unreservedResult(timedOut bool) string {
	if timedOut {
		return HoldTimedOut
	}
	return HoldRejected
}
