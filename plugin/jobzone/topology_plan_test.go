package jobzone

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/topology"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// labelledNode is an 8-GPU node in zone under the network nodes path (layer 1 first).
func labelledNode(name, zone string, path ...string) *v1.Node {
	node := gpuNode(name, zone, 8)
	for layer, value := range path {
		node.Labels[fmt.Sprint(topology.LayerLabelPrefix, layer+1)] = value
	}
	return node
}

func TestPreFilterLeavesOutNodesWithoutRoomAndOtherZones(t *testing.T) {
	h := newHarness(t, nil)
	nodes := append(twoBottomNodes(), labelledNode("b3-busy", "zone-a", "t1", "s1", "b3"),
		labelledNode("b3-free", "zone-a", "t1", "s1", "b3"), labelledNode("elsewhere", "zone-b", "t9", "s9", "b9"))
	// b3 has two nodes but one has a GPU taken: b3 holds one 8-GPU member, so a job of 2
	// goes to b1, the tightest bottom network node that holds it.
	h.lister.set([]*v1.Pod{filler("busy", "b3-busy", 1)}, nodes)
	result, status := h.preFilter(wholeNodeMember("pair", 0, 2, ""))
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("b1-0", "b1-1")) {
		t.Fatalf("job of 2: %v %v; want b1's nodes", result, status)
	}
}

func TestMemberIndex(t *testing.T) {
	job := &zonepolicy.Job{Identity: zonepolicy.Identity{Source: zonepolicy.SourceIndexedJob}, Size: 4}
	pod := member("llm", 0, 4, "")
	for _, c := range []struct {
		annotation string
		want       int
		ok         bool
	}{{"3", 3, true}, {"4", 0, false}, {"-1", 0, false}, {"x", 0, false}} {
		pod.Annotations[zonepolicy.JobCompletionIndex] = c.annotation
		if got, ok := memberIndex(pod, job); got != c.want || ok != c.ok {
			t.Errorf("index %q: %d %v, want %d %v", c.annotation, got, ok, c.want, c.ok)
		}
	}
	jobset := &zonepolicy.Job{Identity: zonepolicy.Identity{Source: zonepolicy.SourceJobSet}, Size: 4}
	if _, ok := memberIndex(pod, jobset); ok {
		t.Error("a JobSet pod's completion index is its child Job's, not its rank")
	}
}

// wholeNodeMember is member index of job (size members) asking a whole 8-GPU node.
func wholeNodeMember(job string, index, size int, nodeName string) *v1.Pod {
	pod := member(job, index, size, nodeName)
	pod.Spec.Containers[0].Resources.Requests[gpupolicy.GPUResource] = resource.MustParse("8")
	return pod
}

// twoBottomNodes is one zone: network node b1 over 2 free 8-GPU nodes and b2 over 3, both
// under t1/s1.
func twoBottomNodes() []*v1.Node {
	return []*v1.Node{
		labelledNode("b1-0", "zone-a", "t1", "s1", "b1"), labelledNode("b1-1", "zone-a", "t1", "s1", "b1"),
		labelledNode("b2-0", "zone-a", "t1", "s1", "b2"), labelledNode("b2-1", "zone-a", "t1", "s1", "b2"),
		labelledNode("b2-2", "zone-a", "t1", "s1", "b2"),
	}
}

func TestPreFilterNarrowsMembersToTheTopologyPlan(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(nil, twoBottomNodes())
	result, status := h.preFilter(wholeNodeMember("llm", 0, 3, ""))
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("b2-0", "b2-1", "b2-2")) {
		t.Fatalf("first member: %v %v; want b2's nodes (3 members under one bottom network node)", result, status)
	}
	// The first member assumed on b2-0: the plan is the same, and b2-0 has its member.
	h.lister.set([]*v1.Pod{wholeNodeMember("llm", 0, 3, "b2-0")}, twoBottomNodes())
	result, status = h.preFilter(wholeNodeMember("llm", 1, 3, ""))
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("b2-1", "b2-2")) {
		t.Fatalf("second member: %v %v; want b2's nodes still short of a member", result, status)
	}
}

func TestPreFilterGivesARankedMemberItsPlannedNode(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(nil, twoBottomNodes())
	pod := wholeNodeMember("llm", 2, 3, "")
	pod.Annotations[zonepolicy.JobCompletionIndex] = "2"
	result, status := h.preFilter(pod)
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("b2-2")) {
		t.Fatalf("index 2: %v %v; want b2-2, the plan's third node", result, status)
	}
}

func TestPreFilterRefusesARequiredLayerNoNetworkNodeHolds(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(nil, twoBottomNodes())
	pod := wholeNodeMember("llm", 0, 4, "")
	pod.Annotations[topology.Annotation] = "required:layer-3"
	_, status := h.preFilter(pod)
	want := fmt.Sprintf(topology.NoNetworkNodeHoldsFormat, 3, 4, 3)
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("status %v, want UnschedulableAndUnresolvable %q", status, want)
	}
	pod.Annotations[topology.Annotation] = "required:layer-2"
	if result, status := h.preFilter(pod); !status.IsSuccess() || result.NodeNames.Len() != 4 {
		t.Fatalf("required:layer-2: %v %v; want 4 nodes under s1", result, status)
	}
}
