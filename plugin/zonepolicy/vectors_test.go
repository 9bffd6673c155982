package zonepolicy_test

import (
	"testing"

	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// TestZoneVectors holds JobFromPod and PlanZone to tests/vectors/zone_cases.json, the
// file policy/job_zone.py is tested against.
func TestZoneVectors(t *testing.T) {
	file := policyvectors.MustLoadZone(t)
	if len(file.Pods) == 0 || len(file.Plans) == 0 {
		t.Fatalf("%s has no cases", policyvectors.ZoneFile)
	}
	agreed := 0
	for _, c := range file.Pods {
		if t.Run("pod/"+c.Name, func(t *testing.T) { checkPodCase(t, c) }) {
			agreed++
		}
	}
	for _, c := range file.Plans {
		if t.Run("plan/"+c.Name, func(t *testing.T) { checkPlanCase(t, c) }) {
			agreed++
		}
	}
	t.Logf("zone vectors: %d of %d cases agreed", agreed, len(file.Pods)+len(file.Plans))
}

func checkPodCase(t *testing.T, c policyvectors.ZonePodCase) {
	pod, ok := policyvectors.MustDecodePod(t, c.Pod, c.Expect.DecodeError)
	if !ok {
		return
	}
	job, err := zonepolicy.JobFromPod(pod, c.Settings)
	if !policyvectors.MustMatchError(t, err, c.Expect.Error) {
		return
	}
	want := c.Expect.Job
	switch {
	case want == nil && job != nil:
		t.Fatalf("job = %+v, want none", *job)
	case want != nil && job == nil:
		t.Fatalf("no job, want %+v", *want)
	case want != nil && (job.Name != want.Name || job.NameLabel != want.NameLabel || job.Size != want.Size):
		t.Fatalf("job = %+v, want %+v", *job, *want)
	}
}

func checkPlanCase(t *testing.T, c policyvectors.ZonePlanCase) {
	failed := map[string]bool{}
	for _, zone := range c.Failed {
		failed[zone] = true
	}
	plan := zonepolicy.PlanZone(c.Copies, c.JobSize, failed)
	if plan.Zone != c.Expect.Zone || plan.Message != c.Expect.Message {
		t.Fatalf("plan = %+v, want zone %q message %q", plan, c.Expect.Zone, c.Expect.Message)
	}
}
