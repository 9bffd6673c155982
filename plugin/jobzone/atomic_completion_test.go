package jobzone

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// expectRejected fails the test unless the held member's wait ended in a rejection by JobZone
// (the plugin whose queueing hints then requeue it) whose message contains want.
func expectRejected(t *testing.T, what string, done <-chan *fwk.Status, want string) {
	t.Helper()
	status := receive(t, what, done)
	if status.IsSuccess() || status.Plugin() != Name || !strings.Contains(status.Message(), want) {
		t.Fatalf("%s: %v (plugin %q), want rejected by %s with %q", what, status, status.Plugin(), Name, want)
	}
}

// stillWaiting fails the test unless the member still waits at Permit for JobZone.
func (h *harness) stillWaiting(t *testing.T, pod *v1.Pod) {
	t.Helper()
	wp := h.fw.GetWaitingPod(pod.UID)
	if wp == nil || !waitsOnJobZone(wp) {
		t.Fatalf("%s no longer waits for %s", pod.Name, Name)
	}
}

// TestAMemberRejectedWhileTheLastArrivesIsNotCounted: a held member is rejected from outside
// JobZone (kube-scheduler's preemption, say) and, before its Unreserve, the job's last member
// arrives. The rejected member is still assumed in the cycle's snapshot, but it no longer
// waits: the job is 2 of 3, so the other held member is not let through alone; the
// rejected member's Unreserve then rejects the rest.
func TestAMemberRejectedWhileTheLastArrivesIsNotCounted(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second, third := member("llm", 0, 3, ""), member("llm", 1, 3, ""), member("llm", 2, 3, "")
	if status := h.permit(first, "b1"); status.Code() != fwk.Wait {
		t.Fatalf("first member: %v, want Wait", status)
	}
	firstDone := h.waitResult(first)
	h.lister.set(append(pods, member("llm", 0, 3, "b1")), nodes)
	status, secondState := h.permitKeeping(second, "b1")
	if status.Code() != fwk.Wait {
		t.Fatalf("second member: %v, want Wait", status)
	}
	secondDone := h.waitResult(second)
	h.fw.GetWaitingPod(second.UID).Reject("DefaultPreemption", "preempted")
	if status := receive(t, "second", secondDone); status.IsSuccess() {
		t.Fatalf("second member: %v, want rejected", status)
	}
	h.lister.set(append(pods, member("llm", 0, 3, "b1"), member("llm", 1, 3, "b1")), nodes)
	// 2 of 3 members: the rejected one is not counted.
	if status := h.permit(third, "b1"); status.Code() != fwk.Wait {
		t.Fatalf("last member: %v, want Wait", status)
	}
	thirdDone := h.waitResult(third)
	h.stillWaiting(t, first)

	h.unreserveKeeping(secondState, second, "b1")
	want := fmt.Sprintf(MemberUnreservedFormat, "ml/llm", "ml/llm-1")
	expectRejected(t, "first", firstDone, want)
	expectRejected(t, "third", thirdDone, want)
}

// TestALateUnreserveOfAnEndedHoldLeavesTheNewHoldAlone: the first member's hold ends (it was
// rejected from outside, then the zone was given up) and the job is held again elsewhere before
// the first member's Unreserve arrives. That Unreserve belongs to the old hold's generation:
// the new hold keeps its member, and the job completes.
func TestALateUnreserveOfAnEndedHoldLeavesTheNewHoldAlone(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	status, firstState := h.permitKeeping(first, "b1")
	if status.Code() != fwk.Wait {
		t.Fatalf("first member: %v, want Wait", status)
	}
	firstDone := h.waitResult(first)
	h.fw.GetWaitingPod(first.UID).Reject("DefaultPreemption", "preempted")
	receive(t, "first", firstDone)
	// No node of the planned zone passes the filters for the second member: the hold ends.
	if _, status := h.postFilter(second); status.IsSuccess() {
		t.Fatalf("PostFilter: %v, want the zone given up", status)
	}
	if status := h.permit(second, "a1"); status.Code() != fwk.Wait {
		t.Fatalf("second member, held again: %v, want Wait", status)
	}
	secondDone := h.waitResult(second)

	h.unreserveKeeping(firstState, first, "b1")
	h.stillWaiting(t, second)
	h.lister.set(append(pods, member("llm", 1, 2, "a1")), nodes)
	if status := h.permit(first, "a1"); !status.IsSuccess() {
		t.Fatalf("first member, again: %v, want the job complete", status)
	}
	if status := receive(t, "second", secondDone); !status.IsSuccess() {
		t.Fatalf("second member: %v, want allowed", status)
	}
}

// TestAMemberWhoseNodeWasCordonedAfterItsFilterIsRejectedWithTheOthers: the last member passed
// the filters on a2, which is cordoned before its Permit. It is rejected, and the held member
// is rejected with it rather than let through alone.
func TestAMemberWhoseNodeWasCordonedAfterItsFilterIsRejectedWithTheOthers(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	if status := h.permit(first, "a1"); status.Code() != fwk.Wait {
		t.Fatalf("first member: %v, want Wait", status)
	}
	firstDone := h.waitResult(first)
	var cordoned []*v1.Node
	for _, node := range nodes {
		if node.Name == "a2" {
			node = node.DeepCopy()
			node.Spec.Unschedulable = true
		}
		cordoned = append(cordoned, node)
	}
	h.lister.set(append(pods, member("llm", 0, 2, "a1")), cordoned)
	status := h.permit(second, "a2")
	want := fmt.Sprintf(NodeTakenFormat, "ml/llm", "a2", "ml/llm-1", gpupolicy.Cordoned)
	if status.Code() != fwk.Unschedulable || status.Message() != want {
		t.Fatalf("last member: %v, want Unschedulable %q", status, want)
	}
	expectRejected(t, "first", firstDone, want)
	// Its own Unreserve changes nothing, and the job is held afresh when it comes back.
	h.unreserve(second, "a2")
	h.lister.set(pods, nodes)
	if status := h.permit(first, "a1"); status.Code() != fwk.Wait {
		t.Fatalf("first member, again: %v, want Wait", status)
	}
}

// TestPreemptingAHeldMemberRejectsItsWholeJobAndRequeuesIt: preemption takes a held member
// (the evaluator's eviction of a waiting victim goes through rejectHeldVictim). The whole hold
// ends under JobZone's name, and every member of the job is sent back to the active queue, so
// the job is planned again at once rather than at the queue's periodic flush.
func TestPreemptingAHeldMemberRejectsItsWholeJobAndRequeuesIt(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second, third := member("llm", 0, 3, ""), member("llm", 1, 3, ""), member("llm", 2, 3, "")
	h.plugin.pods = podsLister(t, first, second, third)
	h.permit(first, "b1")
	firstDone := h.waitResult(first)
	h.lister.set(append(pods, member("llm", 0, 3, "b1")), nodes)
	h.permit(second, "b1")
	secondDone := h.waitResult(second)
	preemptor := withPriority(filler("urgent", "", 2), 1_000_000)

	if !h.plugin.rejectHeldVictim(context.Background(), preemptor, second, "b1") {
		t.Fatal("the held member was not taken by JobZone")
	}
	want := fmt.Sprintf(PreemptedFormat, "ml/llm", "ml/llm-1", "other/urgent")
	expectRejected(t, "first", firstDone, want)
	expectRejected(t, "second", secondDone, want)
	for _, name := range []string{"ml/llm-0", "ml/llm-1", "ml/llm-2"} {
		if !slices.Contains(h.activator.names(), name) {
			t.Errorf("%s not sent back to the active queue; activated %v", name, h.activator.names())
		}
	}
	// A member already given up holds nothing: it is not deleted. A bound member and a pod in no
	// job are DefaultPreemption's.
	if !h.plugin.rejectHeldVictim(context.Background(), preemptor, member("llm", 0, 3, "b1"), "b1") {
		t.Fatal("a member given up was left to DefaultPreemption, which deletes it")
	}
	h.plugin.pods = podsLister(t, first, member("llm", 1, 3, "b1"), third)
	if h.plugin.rejectHeldVictim(context.Background(), preemptor, member("llm", 1, 3, "b1"), "b1") {
		t.Fatal("a bound member was taken by JobZone")
	}
	if h.plugin.rejectHeldVictim(context.Background(), preemptor, filler("plain", "b1", 1), "b1") {
		t.Fatal("a pod in no job was taken by JobZone")
	}
}

// TestAnUnreservedMemberRequeuesItsJob: a member unreserved for any reason (not only the
// deadline) rejects the held members and sends the whole job back to the active queue.
func TestAnUnreservedMemberRequeuesItsJob(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second, third := member("llm", 0, 3, ""), member("llm", 1, 3, ""), member("llm", 2, 3, "")
	h.plugin.pods = podsLister(t, first, second, third)
	h.permit(first, "b1")
	firstDone := h.waitResult(first)
	h.unreserve(second, "b1")
	expectRejected(t, "first", firstDone, fmt.Sprintf(MemberUnreservedFormat, "ml/llm", "ml/llm-1"))
	for _, name := range []string{"ml/llm-0", "ml/llm-1", "ml/llm-2"} {
		if !slices.Contains(h.activator.names(), name) {
			t.Errorf("%s not sent back to the active queue; activated %v", name, h.activator.names())
		}
	}
}

// TestTheEndOfAZoneSkipRequeuesTheJob: no cluster event says that a zone's skip for a job has
// ended, so JobZone sends the job's members back to the active queue itself when it does.
func TestTheEndOfAZoneSkipRequeuesTheJob(t *testing.T) {
	h, _, _ := zoneGivenUpForAJobOfTwo(t)
	h.activator.clear()
	h.clock.Step(DefaultFailedZoneDuration)
	h.activator.waitFor(t, "ml/llm-0")
	h.activator.waitFor(t, "ml/llm-1")
}
