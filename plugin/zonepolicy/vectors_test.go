package zonepolicy_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// TestZoneVectors holds JobFromPod (with each case's Jobs), IsMember and PlanZone to tests/vectors/zone_cases.json,
// the file policy/job_zone.py is tested against.
func TestZoneVectors(t *testing.T) {
	file := policyvectors.MustLoadZone(t)
	if len(file.Pods) == 0 || len(file.Members) == 0 || len(file.Plans) == 0 || len(file.Victims) == 0 {
		t.Fatalf("%s has no cases", policyvectors.ZoneFile)
	}
	agreed := 0
	for _, c := range file.Pods {
		if t.Run("pod/"+c.Name, func(t *testing.T) { checkPodCase(t, c) }) {
			agreed++
		}
	}
	for _, c := range file.Members {
		if t.Run("member/"+c.Name, func(t *testing.T) { checkMemberCase(t, c) }) {
			agreed++
		}
	}
	for _, c := range file.Plans {
		if t.Run("plan/"+c.Name, func(t *testing.T) { checkPlanCase(t, c) }) {
			agreed++
		}
	}
	for _, c := range file.Victims {
		if t.Run("victim/"+c.Name, func(t *testing.T) { checkVictimCase(t, c) }) {
			agreed++
		}
	}
	total := len(file.Pods) + len(file.Members) + len(file.Plans) + len(file.Victims)
	t.Logf("zone vectors: %d of %d cases agreed", agreed, total)
}

func checkPodCase(t *testing.T, c policyvectors.ZonePodCase) {
	pod, ok := policyvectors.MustDecodePod(t, c.Pod, c.Expect.DecodeError)
	if !ok {
		return
	}
	job, err := zonepolicy.JobFromPod(pod, c.Settings, c.OwnerJobs)
	if !policyvectors.MustMatchError(t, err, c.Expect.Error) {
		return
	}
	want := c.Expect.Job
	switch {
	case want == nil && job != nil:
		t.Fatalf("job = %+v, want none", *job)
	case want != nil && job == nil:
		t.Fatalf("no job, want %+v", *want)
	case want != nil && (job.Name != want.Name || string(job.Source) != want.Source || job.NameLabel != want.NameLabel ||
		!maps.Equal(job.MatchLabels, want.MatchLabels) || job.Size != want.Size || job.SizeFrom != want.SizeFrom):
		t.Fatalf("job = %+v, want %+v", *job, *want)
	}
}

func checkMemberCase(t *testing.T, c policyvectors.ZoneMemberCase) {
	pod, _ := policyvectors.MustDecodePod(t, c.Pod, "")
	other, _ := policyvectors.MustDecodePod(t, c.Other, "")
	settings := zonepolicy.DefaultSettings()
	job, err := zonepolicy.JobFromPod(pod, settings, nil)
	if err != nil || job == nil {
		t.Fatalf("the case's pod is in no job: %v", err)
	}
	if !zonepolicy.IsMember(pod, pod.Namespace, job, settings) {
		t.Fatal("a pod is not a member of its own job")
	}
	if got := zonepolicy.IsMember(other, pod.Namespace, job, settings); got != c.Expect.Member {
		t.Fatalf("IsMember = %v, want %v", got, c.Expect.Member)
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

func checkVictimCase(t *testing.T, c policyvectors.ZoneVictimCase) {
	decode := func(raws []json.RawMessage) []*v1.Pod {
		pods := make([]*v1.Pod, 0, len(raws))
		for _, raw := range raws {
			pod, _ := policyvectors.MustDecodePod(t, raw, "")
			pods = append(pods, pod)
		}
		return pods
	}
	got := zonepolicy.WholeJobVictims(decode(c.Victims), decode(c.Pods), c.PreemptorPriority, zonepolicy.DefaultSettings(), c.OwnerJobs)
	victims := []string{}
	for _, pod := range got.Victims {
		victims = append(victims, pod.Namespace+"/"+pod.Name)
	}
	if string(got.Outcome) != c.Expect.Outcome || !slices.Equal(victims, c.Expect.Victims) || got.Broken != c.Expect.Broken {
		t.Fatalf("WholeJobVictims = %s %v broken %d, want %s %v broken %d",
			got.Outcome, victims, got.Broken, c.Expect.Outcome, c.Expect.Victims, c.Expect.Broken)
	}
}
