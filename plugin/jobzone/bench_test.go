package jobzone

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// benchNodes is a snapshot of count 8-GPU nodes over three zones, each running one pod.
func benchNodes(b *testing.B, count int) []fwk.NodeInfo {
	b.Helper()
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	infos := make([]fwk.NodeInfo, 0, count)
	for i := range count {
		node := gpuNode(fmt.Sprintf("gpu-%d", i), zones[i%len(zones)], 8)
		info := framework.NewNodeInfo(filler(fmt.Sprintf("running-%d", i), node.Name, 1))
		info.SetNode(node)
		infos = append(infos, info)
	}
	return infos
}

// BenchmarkPreFilter measures JobZone's PreFilter on 500 nodes: for a pod in no job (it
// returns Skip), a job's first member (the zone plan over every node) and a later member
// (the scan for the zone of the members placed).
//
//	cd plugin && go test -run '^$' -bench PreFilter -benchmem ./jobzone
func BenchmarkPreFilter(b *testing.B) {
	h := newHarness(b, nil)
	nodes := benchNodes(b, 500)
	placed := framework.NewNodeInfo(member("llm", 0, 8, "gpu-1"))
	placed.SetNode(nodes[1].Node())
	withMember := append(append([]fwk.NodeInfo{}, nodes[:1]...), placed)
	withMember = append(withMember, nodes[2:]...)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		pod   *v1.Pod
		nodes []fwk.NodeInfo
	}{
		{"no-job", filler("plain", "", 1), nodes},
		{"first-member-of-8", member("llm", 0, 8, ""), nodes},
		{"later-member-of-8", member("llm", 1, 8, ""), withMember},
	} {
		b.Run(tt.name, func(b *testing.B) {
			for b.Loop() {
				state := framework.NewCycleState()
				if _, status := h.plugin.PreFilter(ctx, state, tt.pod, tt.nodes); !status.IsSuccess() && status.Code() != fwk.Skip {
					b.Fatal(status)
				}
			}
		})
	}
}
