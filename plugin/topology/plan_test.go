package topology_test

import (
	"fmt"
	"slices"
	"testing"

	"example.com/gpu-scheduler-eks/plugin/topology"
)

// benchmarkZone is the benchmark's zone: 256 nodes of 8 free GPUs in a 2 x 4 x 8 x 4 tree
// (layer 1, layer 2, layer 3 the bottom, 4 nodes under each bottom network node).
func benchmarkZone() []topology.Node {
	var zone []topology.Node
	for a := range 2 {
		for b := range 4 {
			for c := range 8 {
				for d := range 4 {
					path := []string{fmt.Sprint("t", a), fmt.Sprint("s", a, b), fmt.Sprint("m", a, b, c)}
					zone = append(zone, topology.Node{Name: fmt.Sprint("n", a, b, c, d), Path: path, FreeGPUs: 8})
				}
			}
		}
	}
	return zone
}

func repeat(gpus int64, count int) []int64 {
	members := make([]int64, count)
	for i := range members {
		members[i] = gpus
	}
	return members
}

// TestLargeZoneIsPlannedWhole: 64 one-node members take two layer-2 domains whole
// (32 nodes each) in 16 bottom domains; 512 one-GPU members pack the same nodes.
func TestLargeZoneIsPlannedWhole(t *testing.T) {
	for _, gpus := range []int64{8, 1} {
		plan := topology.PlanTopology(benchmarkZone(), repeat(gpus, int(512/gpus)), topology.Choice{}, 3)
		if plan.Message != "" || !slices.Equal(plan.Layers, []int64{1, 2, 16}) {
			t.Fatalf("%d-GPU members: layers %v (%s), want [1 2 16]", gpus, plan.Layers, plan.Message)
		}
	}
}

func TestRequiredLayerNeverUsesUnlabelledNodes(t *testing.T) {
	zone := []topology.Node{
		{Name: "bare", FreeGPUs: 16},
		{Name: "a", Path: []string{"t", "s", "b"}, FreeGPUs: 8},
	}
	plan := topology.PlanTopology(zone, repeat(8, 2), topology.Choice{RequiredLayer: 1}, 3)
	want := fmt.Sprintf(topology.NoNetworkNodeHoldsFormat, 1, 2, 1)
	if plan.Message != want || plan.Nodes != nil {
		t.Fatalf("plan = %v %q, want none: %q", plan.Nodes, plan.Message, want)
	}
	if plan := topology.PlanTopology(zone, repeat(8, 2), topology.Choice{}, 3); plan.Message != "" {
		t.Fatalf("preferred uses the unlabelled node: %q", plan.Message)
	}
}

// BenchmarkPlanTopology plans jobs of 4 to 64 one-node members on the benchmark's zone.
func BenchmarkPlanTopology(b *testing.B) {
	zone := benchmarkZone()
	for _, size := range []int{4, 16, 64} {
		b.Run(fmt.Sprint("members-", size), func(b *testing.B) {
			members := repeat(8, size)
			for b.Loop() {
				topology.PlanTopology(zone, members, topology.Choice{}, 3)
			}
		})
	}
}
