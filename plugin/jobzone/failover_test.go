package jobzone

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// postFilter runs PreFilter then PostFilter for pod in one cycle, as the scheduler does when
// no node passed the filters.
func (h *harness) postFilter(pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status) {
	state := framework.NewCycleState()
	nodes, err := h.lister.NodeInfos().List()
	if err != nil {
		h.t.Fatal(err)
	}
	result, status := h.plugin.PreFilter(context.Background(), state, pod, nodes)
	if !status.IsSuccess() && status.Code() != fwk.Skip {
		return result, status
	}
	_, status = h.plugin.PostFilter(context.Background(), state, pod, framework.NewDefaultNodeToStatus())
	return result, status
}

// TestPostFilterGivesUpTheZoneAtOnce: the job of 8 is planned in b (the tightest fit), one
// member is held there, and no node of b passes the filters for the second (say, a host
// port the plan cannot see). The held member is rejected at once, not after permitTimeout;
// b is skipped for the job; both members are sent back to the active queue; and the next
// plan is c.
func TestPostFilterGivesUpTheZoneAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	nodes = append(nodes, gpuNode("c2", "us-east-1c", 8)) // zone c: 10 free, b: 8 (tighter for a job of 8)
	h.lister.set(pods, nodes)
	first, second := member("llm", 0, 8, ""), member("llm", 1, 8, "")
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("plan %v, want zone b", result.NodeNames)
	}
	h.permit(first, "b1")
	firstDone := h.waitResult(first)
	h.lister.set(append(pods, member("llm", 0, 8, "b1")), nodes)

	result, status := h.postFilter(second)
	if !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("second member restricted to %v, want zone b", result.NodeNames)
	}
	want := fmt.Sprintf(ZoneRefusedFormat, "ml/llm", "us-east-1b", DefaultFailedZoneDuration)
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("PostFilter: %v, want UnschedulableAndUnresolvable %q (no preemption for one member)", status, want)
	}
	if held := receive(t, "first", firstDone); held.IsSuccess() || !strings.Contains(held.Message(), want) {
		t.Fatalf("held member: %v, want rejected with %q", held, want)
	}
	if activated := h.activator.names(); !slices.Contains(activated, "ml/llm-1") {
		t.Fatalf("activated %v, want the member itself sent back to the active queue", activated)
	}
	h.unreserve(first, "b1")
	h.lister.set(pods, nodes)
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("c1", "c2")) {
		t.Fatalf("replan %v, want zone c", result.NodeNames)
	}
}

// TestPostFilterLeavesAJobWithBoundMembersToPreemption: members already bound in the zone
// cannot move, so the zone is kept and the status lets DefaultPreemption make room there.
func TestPostFilterLeavesAJobWithBoundMembersToPreemption(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(append(pods, member("llm", 0, 8, "b1")), nodes)
	_, status := h.postFilter(member("llm", 1, 8, ""))
	want := fmt.Sprintf(BoundZoneFullFormat, "ml/llm", "us-east-1b")
	if status.Code() != fwk.Unschedulable || status.Message() != want {
		t.Fatalf("PostFilter: %v, want Unschedulable %q", status, want)
	}
	if result, _ := h.preFilter(member("llm", 1, 8, "")); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("the member must stay with the bound ones in b: %v", result.NodeNames)
	}
}

func TestPostFilterLeavesPodsInNoJobToPreemption(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	if _, status := h.postFilter(filler("lone", "", 1)); status.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter for a pod in no job: %v, want Unschedulable (DefaultPreemption decides)", status)
	}
}
