package jobzone

import (
	"context"
	"testing"

	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestEventsToRegister(t *testing.T) {
	h := newHarness(t, nil)
	events, err := h.plugin.EventsToRegister(context.Background())
	if err != nil || len(events) != 3 {
		t.Fatalf("events %v, error %v", events, err)
	}
	if events[0].Event.Resource != fwk.Node || events[0].QueueingHintFn != nil {
		t.Errorf("the first event must be any Node change, always queued: %+v", events[0].Event)
	}
}

func TestPodDeleteHint(t *testing.T) {
	h := newHarness(t, nil)
	logger := klog.Background()
	pending := member("llm", 1, 8, "")
	cpuOnly := filler("cpu", "b1", 0)
	for _, tt := range []struct {
		name    string
		deleted any
		want    fwk.QueueingHint
	}{
		{"a member of the job", member("llm", 0, 8, "b1"), fwk.Queue},
		{"a pod that held GPUs", filler("gpu", "b1", 2), fwk.Queue},
		{"a pod without GPUs in another job", cpuOnly, fwk.QueueSkip},
	} {
		got, err := h.plugin.isSchedulableAfterPodDelete(logger, pending, tt.deleted, nil)
		if err != nil || got != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := h.plugin.isSchedulableAfterPodDelete(logger, pending, "not a pod", nil); err == nil {
		t.Error("no error for an object that is not a pod")
	}
}

func TestPodUpdateHint(t *testing.T) {
	h := newHarness(t, nil)
	logger := klog.Background()
	pending := member("llm", 1, 8, "")
	if got, _ := h.plugin.isSchedulableAfterPodUpdate(logger, pending, nil, pending.DeepCopy()); got != fwk.Queue {
		t.Errorf("the pod itself updated: %v, want Queue", got)
	}
	if got, _ := h.plugin.isSchedulableAfterPodUpdate(logger, pending, nil, member("llm", 2, 8, "")); got != fwk.QueueSkip {
		t.Errorf("another pod updated: %v, want QueueSkip", got)
	}
}
