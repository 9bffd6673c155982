package jobzone

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/topology"
)

// labelledNode is an 8-GPU node in zone under the network nodes path (layer 1 first).
func labelledNode(name, zone string, path ...string) *v1.Node {
	node := gpuNode(name, zone, 8)
	for layer, value := range path {
		node.Labels[fmt.Sprint(topology.LayerLabelPrefix, layer+1)] = value
	}
	return node
}

func infosOf(nodes []*v1.Node, pods map[string][]*v1.Pod) []fwk.NodeInfo {
	infos := make([]fwk.NodeInfo, 0, len(nodes))
	for _, node := range nodes {
		info := framework.NewNodeInfo(pods[node.Name]...)
		info.SetNode(node)
		infos = append(infos, info)
	}
	return infos
}

// eightGPUMember is a member asking a whole 8-GPU node.
func eightGPUMember() *v1.Pod {
	pod := member("llm", 0, 4, "")
	pod.Spec.Containers[0].Resources.Requests[gpupolicy.GPUResource] = resource.MustParse("8")
	return pod
}

func testConfig(t *testing.T) config {
	t.Helper()
	c, err := configFromArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlanTopologyPacksTheZonesMembersUnderOneBottomNetworkNode(t *testing.T) {
	c := testConfig(t)
	nodes := []*v1.Node{
		labelledNode("a-0", "zone-a", "t1", "s1", "b1"),
		labelledNode("a-1", "zone-a", "t1", "s1", "b1"),
		labelledNode("b-0", "zone-a", "t1", "s2", "b2"),
		labelledNode("b-1", "zone-a", "t1", "s2", "b2"),
		labelledNode("b-2", "zone-a", "t1", "s2", "b2"),
		labelledNode("busy", "zone-a", "t1", "s2", "b2"),
		labelledNode("other-zone", "zone-b", "t9", "s9", "b9"),
		gpuNode("bare", "zone-a", 8),
	}
	busy := map[string][]*v1.Pod{"busy": {member("other", 0, 1, "busy")}}
	shape := newPodShape(eightGPUMember(), c)
	plan := planTopology(klog.Background(), infosOf(nodes, busy), "zone-a", shape, 3, topology.Choice{}, c)
	if plan.Message != "" || !slices.Equal(plan.Nodes, []string{"b-0", "b-1", "b-2"}) {
		t.Fatalf("plan = %v %q; want the three free nodes of b2 (busy has a GPU taken, other-zone is elsewhere)", plan.Nodes, plan.Message)
	}
	plan = planTopology(klog.Background(), infosOf(nodes, busy), "zone-a", shape, 6, topology.Choice{RequiredLayer: 2}, c)
	if want := fmt.Sprintf(topology.NoNetworkNodeHoldsFormat, 2, 6, 3); plan.Message != want {
		t.Fatalf("required:layer-2 for 6: %q, want %q", plan.Message, want)
	}
	plan = planTopology(klog.Background(), infosOf(nodes, busy), "zone-a", shape, 6, topology.Choice{}, c)
	if plan.Message != "" || !slices.Equal(plan.Layers, []int64{2, 3, 3, 3}) {
		t.Fatalf("preferred for 6: layers %v %q; want b1, b2 and the unlabelled node (layer 4 counts the three-layer bottoms again)", plan.Layers, plan.Message)
	}
}

func TestTopologyNodesCountCopiesNotGPUs(t *testing.T) {
	c := testConfig(t)
	nodes := []*v1.Node{labelledNode("n", "zone-a", "t1", "s1", "b1")}
	one := member("llm", 0, 8, "")
	got := topologyNodes(klog.Background(), infosOf(nodes, map[string][]*v1.Pod{"n": {member("x", 0, 1, "n")}}), "zone-a", newPodShape(one, c), c)
	if len(got) != 1 || got[0].FreeGPUs != 7 || !slices.Equal(got[0].Path, []string{"t1", "s1", "b1"}) {
		t.Fatalf("topologyNodes = %+v; want one node with 7 free GPUs under t1/s1/b1", got)
	}
	if got := topologyNodes(klog.Background(), infosOf(nodes, nil), "zone-a", newPodShape(eightGPUMember(), c), c); len(got) != 1 || got[0].FreeGPUs != 8 {
		t.Fatalf("an 8-GPU member: %+v", got)
	}
}
