package jobzone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// TestRoomFreedInARefusedZoneEndsItsSkip: no node of the job's zone passed the filters for a
// member (a pod in no job took the room), so PostFilter skipped the zone. When a pod placed in
// that zone is deleted the skip ends at once, the job is requeued and planned there again; a pod
// leaving another zone changes nothing.
func TestRoomFreedInARefusedZoneEndsItsSkip(t *testing.T) {
	h, first, _ := zoneGivenUpForAJobOfTwo(t)
	const zone = "us-east-1c" // the tightest fit for a job of 2
	if !h.plugin.failedZones("ml/llm")[zone] {
		t.Fatalf("skipped %v, want %s", h.plugin.failedZones("ml/llm"), zone)
	}
	h.activator.clear()
	logger := klog.Background()

	h.plugin.podLeft(logger, filler("busy", "a2", 2))
	if !h.plugin.failedZones("ml/llm")[zone] || len(h.activator.names()) != 0 {
		t.Fatalf("a pod leaving zone a ended c's skip (skipped %v, activated %v)", h.plugin.failedZones("ml/llm"), h.activator.names())
	}
	h.plugin.podLeft(logger, filler("plain", "c1", 1))
	if h.plugin.failedZones("ml/llm")[zone] {
		t.Fatalf("zone %s still skipped after a pod there left", zone)
	}
	h.activator.waitFor(t, "ml/llm-0")
	h.activator.waitFor(t, "ml/llm-1")
	result, status := h.preFilter(first)
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("c1")) {
		t.Fatalf("PreFilter after the skip ended: %v %v, want zone c's node", result, status)
	}
}

// TestANodeGainingRoomEndsARefusedZonesSkip: a node of the zone uncordoned ends the skip too.
func TestANodeGainingRoomEndsARefusedZonesSkip(t *testing.T) {
	h, _, _ := zoneGivenUpForAJobOfTwo(t)
	h.plugin.endRoomSkips(klog.Background(), "us-east-1c", "test")
	if h.plugin.failedZones("ml/llm")["us-east-1c"] {
		t.Fatal("zone c still skipped after room freed there")
	}
}

// TestATimedOutZoneStaysSkippedWhenRoomFrees: a job whose time ran out in a zone skips it for
// failedZoneDuration, whatever leaves the zone (what kept its members away is not known).
func TestATimedOutZoneStaysSkippedWhenRoomFrees(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	h.plugin.pods = podsLister(t, first, second)
	if status := h.permit(first, "c1"); status.Code() != 0 && !status.IsWait() {
		t.Fatalf("Permit: %v", status)
	}
	done := h.waitResult(first)
	h.clock.Step(DefaultPermitTimeout)
	if status := receive(t, "first", done); status.IsSuccess() {
		t.Fatal("the held member was let through after the job's time ran out")
	}
	eventually(t, "zone c skipped", func() bool { return h.plugin.failedZones("ml/llm")["us-east-1c"] })
	h.plugin.podLeft(klog.Background(), filler("plain", "c1", 1))
	if !h.plugin.failedZones("ml/llm")["us-east-1c"] {
		t.Fatal("a timed-out zone's skip ended when a pod left it")
	}
}

func TestNodeGainedRoom(t *testing.T) {
	base := gpuNode("n", "us-east-1a", 4)
	cordoned := base.DeepCopy()
	cordoned.Spec.Unschedulable = true
	tainted := base.DeepCopy()
	tainted.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}
	bigger := base.DeepCopy()
	bigger.Status.Allocatable[gpupolicy.GPUResource] = resource.MustParse("8")
	heartbeat := base.DeepCopy()
	heartbeat.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	for _, tt := range []struct {
		name     string
		old, new *v1.Node
		want     bool
	}{
		{"added", nil, base, true},
		{"uncordoned", cordoned, base, true},
		{"cordoned", base, cordoned, false},
		{"taint removed", tainted, base, true},
		{"more GPUs", base, bigger, true},
		{"status heartbeat", base, heartbeat, false},
	} {
		if got := nodeGainedRoom(tt.old, tt.new, zonepolicy.ZoneLabel); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
