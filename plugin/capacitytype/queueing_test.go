package capacitytype

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/internal/plugintest"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

func TestEventsToRegister(t *testing.T) {
	events, err := newPlugin(t, nil).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []fwk.ClusterEvent{
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint},
		{Resource: fwk.Pod, ActionType: fwk.Update},
	}
	plugintest.CheckEvents(t, events, want)
}

func TestNodeChangeHint(t *testing.T) {
	ours := gpupolicy.CapacityTypeLabel
	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.Node
		want     fwk.QueueingHint
	}{
		{"added node of the required type", choosingPod("spot", false), nil, capacityNode(ours, "spot"), fwk.Queue},
		{"added node of the other type", choosingPod("spot", false), nil, capacityNode(ours, "on-demand"), fwk.QueueSkip},
		{"added node being taken away", choosingPod("spot", false), nil, capacityNode(ours, "spot", "karpenter.sh/disrupted"), fwk.QueueSkip},
		{"label added", choosingPod("on-demand", false), capacityNode("", ""), capacityNode(ours, "on-demand"), fwk.Queue},
		{"label changed to the other type", choosingPod("on-demand", false), capacityNode(ours, "on-demand"), capacityNode(ours, "spot"), fwk.QueueSkip},
		{"disruption taint removed", choosingPod("prefer-spot", false), capacityNode(ours, "spot", "karpenter.sh/disrupted"), capacityNode(ours, "spot"), fwk.Queue},
		{"suited before and after", choosingPod("prefer-spot", false), capacityNode(ours, "on-demand"), capacityNode(ours, "spot"), fwk.QueueSkip},
		{"invalid pod: no node helps", choosingPod("Spot", false), nil, capacityNode(ours, "spot"), fwk.QueueSkip},
		{"no choice: this plugin passes every node", choosingPod("-", false), nil, capacityNode("", ""), fwk.Queue},
	}
	pl := newPlugin(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			var oldObj interface{}
			if tt.old != nil {
				oldObj = tt.old
			}
			got, err := pl.isSchedulableAfterNodeChange(logger, tt.pod, oldObj, tt.new)
			if err != nil || got != tt.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestPodUpdateHint(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     fwk.QueueingHint
	}{
		{"corrected", "Spot", "spot", fwk.Queue},
		{"relaxed to a preference", "spot", "prefer-spot", fwk.Queue},
		{"annotation removed", "on-demand", "-", fwk.Queue},
		{"unchanged", "spot", "spot", fwk.QueueSkip},
		{"still invalid", "Spot", "SPOT", fwk.QueueSkip},
	}
	pl := newPlugin(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			oldPod, newPod := choosingPod(tt.old, false), choosingPod(tt.new, false)
			got, err := pl.isSchedulableAfterPodUpdate(logger, newPod, oldPod, newPod)
			if err != nil || got != tt.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	other := choosingPod("spot", false)
	other.UID = "uid-other"
	logger, _ := ktesting.NewTestContext(t)
	if got, _ := pl.isSchedulableAfterPodUpdate(logger, choosingPod("Spot", false), choosingPod("x", false), other); got != fwk.QueueSkip {
		t.Errorf("another pod's update: hint %v, want QueueSkip", got)
	}
}
