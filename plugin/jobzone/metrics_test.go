package jobzone

import (
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// counter reads a counter's value now.
func counter(t *testing.T, m metrics.CounterMetric) float64 {
	t.Helper()
	value, err := testutil.GetCounterMetricValue(m)
	if err != nil {
		t.Fatal(err)
	}
	return value
}

// holdCounts is what the hold counters read now: jobs held, then each result's holds ended and GPU-seconds.
type holdCounts struct {
	held       float64
	ended, gpu map[string]float64
}

func readHolds(t *testing.T) holdCounts {
	t.Helper()
	c := holdCounts{held: counter(t, JobsHeld), ended: map[string]float64{}, gpu: map[string]float64{}}
	for _, result := range []string{HoldReleased, HoldTimedOut, HoldRejected} {
		c.ended[result] = counter(t, HoldsEnded.WithLabelValues(result))
		c.gpu[result] = counter(t, HeldGPUSeconds.WithLabelValues(result))
	}
	return c
}

// expectHolds checks what changed since before: one more job held (or none), one hold ended
// with result and gpuSeconds added under it, nothing under the other results.
func expectHolds(t *testing.T, before holdCounts, held float64, result string, gpuSeconds float64) {
	t.Helper()
	after := readHolds(t)
	if got := after.held - before.held; got != held {
		t.Errorf("jobs held went up by %v, want %v", got, held)
	}
	for _, r := range []string{HoldReleased, HoldTimedOut, HoldRejected} {
		wantEnded, wantGPU := 0.0, 0.0
		if r == result {
			wantEnded, wantGPU = 1, gpuSeconds
		}
		if got := after.ended[r] - before.ended[r]; got != wantEnded {
			t.Errorf("holds ended %s went up by %v, want %v", r, got, wantEnded)
		}
		if got := after.gpu[r] - before.gpu[r]; got != wantGPU {
			t.Errorf("GPU-seconds held %s went up by %v, want %v", r, got, wantGPU)
		}
	}
}

func TestAReleasedJobCountsItsHoldAndTheGPUSecondsItsMembersWaited(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	before := readHolds(t)
	first, second, third := member("llm", 0, 3, ""), member("llm", 1, 3, ""), member("llm", 2, 3, "")
	h.permit(first, "b1")
	firstDone := h.waitResult(first)
	h.clock.Step(10 * time.Second)
	h.lister.set(append(pods, member("llm", 0, 3, "b1")), nodes)
	h.permit(second, "b1")
	secondDone := h.waitResult(second)
	h.clock.Step(5 * time.Second)
	h.lister.set(append(pods, member("llm", 0, 3, "b1"), member("llm", 1, 3, "b1")), nodes)
	if status := h.permit(third, "b1"); !status.IsSuccess() {
		t.Fatalf("third member: %v", status)
	}
	receive(t, "first", firstDone)
	receive(t, "second", secondDone)
	// One GPU each: the first held for 15 s, the second for 5 s; the third never waited.
	expectHolds(t, before, 1, HoldReleased, 20)
}

func TestATimedOutJobCountsAsTimedOut(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	before := readHolds(t)
	first := member("llm", 0, 8, "")
	h.permit(first, "b1")
	done := h.waitResult(first)
	h.clock.Step(DefaultPermitTimeout) // JobZone's own timer ends the hold
	receive(t, "first", done)
	h.unreserve(first, "b1")
	expectHolds(t, before, 1, HoldTimedOut, DefaultPermitTimeout.Seconds())
	h.unreserve(first, "b1") // the hold is gone: nothing counted twice
	expectHolds(t, before, 1, HoldTimedOut, DefaultPermitTimeout.Seconds())
}

func TestAJobUnreservedBeforeItsDeadlineCountsAsRejected(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	before := readHolds(t)
	first, second := member("llm", 0, 8, ""), member("llm", 1, 8, "")
	h.permit(first, "b1")
	done := h.waitResult(first)
	h.clock.Step(time.Minute)
	h.unreserve(second, "b1")
	receive(t, "first", done)
	expectHolds(t, before, 1, HoldRejected, 60)
}

func TestZonePlansAreCountedByResult(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	planned, none := counter(t, ZonePlans.WithLabelValues(PlanPlanned)), counter(t, ZonePlans.WithLabelValues(PlanNoZone))
	h.preFilter(member("llm", 0, 8, ""))
	h.preFilter(member("huge", 0, 9, ""))
	h.preFilter(member("plain", 0, 0, "")) // an invalid job size is refused before any plan
	if got := counter(t, ZonePlans.WithLabelValues(PlanPlanned)) - planned; got != 1 {
		t.Errorf("planned went up by %v, want 1", got)
	}
	if got := counter(t, ZonePlans.WithLabelValues(PlanNoZone)) - none; got != 1 {
		t.Errorf("no_zone went up by %v, want 1", got)
	}
}

// TestTheMetricsAreServedWithEveryResultFromTheStart reads the registry gpu-scheduler's
// /metrics serves: every metric under its name, every result at zero before any event.
func TestTheMetricsAreServedWithEveryResultFromTheStart(t *testing.T) {
	newHarness(t, nil)
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"scheduler_jobzone_zone_plans_total":       2,
		"scheduler_jobzone_jobs_held_total":        1,
		"scheduler_jobzone_holds_ended_total":      3,
		"scheduler_jobzone_held_gpu_seconds_total": 3,
	}
	for _, family := range families {
		if n, ok := want[family.GetName()]; ok {
			if got := len(family.GetMetric()); got != n {
				t.Errorf("%s: %d series, want %d", family.GetName(), got, n)
			}
			delete(want, family.GetName())
		}
	}
	if len(want) > 0 {
		t.Errorf("not served: %v", want)
	}
}
