package gpuscheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/plugintest"
)

func TestEventsToRegister(t *testing.T) {
	events, err := newPlugin(t, nil).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []fwk.ClusterEvent{
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel},
		{Resource: fwk.Pod, ActionType: fwk.Update},
	}
	plugintest.CheckEvents(t, events, want)
}

// vendorLabelled returns an unlabelled GPU node carrying one vendor label.
func vendorLabelled(label, memory string) *v1.Node {
	node := gpuNode("gpu-1", "-")
	node.Labels[label] = memory
	return node
}

func TestNodeChangeHint(t *testing.T) {
	relabel := func(memory string) *v1.Node { return gpuNode("gpu-1", memory) }
	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.Node
		want     fwk.QueueingHint
	}{
		{"added node fits", gpuPod("1", "40960"), nil, relabel("81920"), fwk.Queue},
		{"added node fits exactly", gpuPod("1", "40960"), nil, relabel("40960"), fwk.Queue},
		{"added node too small", gpuPod("1", "40960"), nil, relabel("22888"), fwk.QueueSkip},
		{"added node unlabelled", gpuPod("1", "40960"), nil, relabel("-"), fwk.QueueSkip},
		{"label raised to fit", gpuPod("1", "40960"), relabel("22888"), relabel("81920"), fwk.Queue},
		{"label added and fits", gpuPod("1", "40960"), relabel("-"), relabel("45776"), fwk.Queue},
		{"invalid label corrected", gpuPod("1", "40960"), relabel("80Gi"), relabel("81920"), fwk.Queue},
		{"label raised, still too small", gpuPod("1", "40960"), relabel("16384"), relabel("22888"), fwk.QueueSkip},
		{"label lowered", gpuPod("1", "40960"), relabel("81920"), relabel("22888"), fwk.QueueSkip},
		{"fitted before and after", gpuPod("1", "40960"), relabel("45776"), relabel("81920"), fwk.QueueSkip},
		{"label removed", gpuPod("1", "40960"), relabel("81920"), relabel("-"), fwk.QueueSkip},
		{"Karpenter's label added and fits", gpuPod("1", "40960"), relabel("-"), vendorLabelled(gpupolicy.KarpenterGPUMemoryLabel, "81920"), fwk.Queue},
		{"GFD's label added, too small", gpuPod("1", "40960"), relabel("-"), vendorLabelled(gpupolicy.GFDGPUMemoryLabel, "23028"), fwk.QueueSkip},
		{"invalid pod: no node helps", gpuPod("1", "lots"), nil, relabel("81920"), fwk.QueueSkip},
		{"minimum without GPU: no node helps", gpuPod("", "16384"), nil, relabel("81920"), fwk.QueueSkip},
		{"no minimum: this plugin passes every node", gpuPod("1", "-"), nil, relabel("-"), fwk.Queue},
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
			if err != nil {
				t.Fatalf("hint error: %v", err)
			}
			if got != tt.want {
				t.Fatalf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNodeChangeHintAgreesWithFilter checks, over many label pairs, that the hint says
// Queue exactly when Filter rejected the old node and accepts the new one.
func TestNodeChangeHintAgreesWithFilter(t *testing.T) {
	pl := newPlugin(t, nil)
	pod := gpuPod("1", "40960")
	labels := []string{"-", "", "0", "x", "16384", "40959", "40960", "40961", "81920", "1048576", "1048577"}
	logger, _ := ktesting.NewTestContext(t)
	for _, before := range labels {
		for _, after := range labels {
			oldNode, newNode := gpuNode("n", before), gpuNode("n", after)
			passedBefore := pl.Filter(context.Background(), nil, pod, nodeInfo(oldNode)).IsSuccess()
			passesNow := pl.Filter(context.Background(), nil, pod, nodeInfo(newNode)).IsSuccess()
			want := fwk.QueueSkip
			if passesNow && !passedBefore {
				want = fwk.Queue
			}
			got, err := pl.isSchedulableAfterNodeChange(logger, pod, oldNode, newNode)
			if err != nil || got != want {
				t.Errorf("label %q -> %q: hint %v, %v; want %v", before, after, got, err, want)
			}
		}
	}
}

func TestNodeChangeHintErrors(t *testing.T) {
	pl := newPlugin(t, nil)
	logger, _ := ktesting.NewTestContext(t)
	got, err := pl.isSchedulableAfterNodeChange(logger, gpuPod("1", "40960"), nil, &v1.Pod{})
	if err == nil || got != fwk.Queue {
		t.Fatalf("a non-Node object: hint %v, error %v; want Queue and an error", got, err)
	}
	// A deleted-final-state wrapper is unwrapped, as upstream's helper does.
	tombstone := cache.DeletedFinalStateUnknown{Key: "gpu-1", Obj: gpuNode("gpu-1", "16384")}
	got, err = pl.isSchedulableAfterNodeChange(logger, gpuPod("1", "40960"), tombstone, gpuNode("gpu-1", "81920"))
	if err != nil || got != fwk.Queue {
		t.Fatalf("tombstone old node: hint %v, error %v; want Queue", got, err)
	}
}

func TestPodUpdateHint(t *testing.T) {
	withMinimum := func(minimum string) *v1.Pod { return gpuPod("1", minimum) }
	otherPod := gpuPod("1", "16384")
	otherPod.UID = types.UID("uid-other")
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     fwk.QueueingHint
	}{
		{"annotation corrected", withMinimum("40 GiB"), withMinimum("40960"), fwk.Queue},
		{"minimum lowered", withMinimum("81920"), withMinimum("40960"), fwk.Queue},
		{"minimum removed", withMinimum("81920"), withMinimum("-"), fwk.Queue},
		{"minimum raised", withMinimum("40960"), withMinimum("81920"), fwk.QueueSkip},
		{"minimum unchanged (other update)", withMinimum("40960"), withMinimum("40960"), fwk.QueueSkip},
		{"still invalid", withMinimum("40 GiB"), withMinimum("40GiB"), fwk.QueueSkip},
		{"made invalid", withMinimum("40960"), withMinimum("0"), fwk.QueueSkip},
		{"another pod", withMinimum("81920"), otherPod, fwk.QueueSkip},
	}
	pl := newPlugin(t, nil)
	pending := withMinimum("81920")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got, err := pl.isSchedulableAfterPodUpdate(logger, pending, tt.old, tt.new)
			if err != nil || got != tt.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	logger, _ := ktesting.NewTestContext(t)
	if got, err := pl.isSchedulableAfterPodUpdate(logger, pending, nil, gpuNode("n", "1")); err == nil || got != fwk.Queue {
		t.Fatalf("a non-Pod object: hint %v, error %v; want Queue and an error", got, err)
	}
}

// TestHintsUseConfiguredKeys: the hints read the same settings as Filter.
func TestHintsUseConfiguredKeys(t *testing.T) {
	pl := newPlugin(t, nil)
	pl.settings.NodeMemoryLabel = "example.org/gpu-mib"
	logger, _ := ktesting.NewTestContext(t)
	node := gpuNode("n", "81920") // only the default label
	if got, _ := pl.isSchedulableAfterNodeChange(logger, gpuPod("1", "40960"), nil, node); got != fwk.QueueSkip {
		t.Fatalf("hint read the default label instead of the configured one")
	}
	node.Labels["example.org/gpu-mib"] = "81920"
	if got, _ := pl.isSchedulableAfterNodeChange(logger, gpuPod("1", "40960"), nil, node); got != fwk.Queue {
		t.Fatalf("hint ignored the configured label")
	}
}
