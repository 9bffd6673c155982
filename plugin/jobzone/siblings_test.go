package jobzone

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
)

// podStore stands for the scheduler's pod informer: the plugin counts a job's members in it.
func podStore(t *testing.T, h *harness, pods ...*v1.Pod) cache.Indexer {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, pod := range pods {
		if err := store.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	h.plugin.pods = corelisters.NewPodLister(store)
	return store
}

func TestAMemberWaitsUntilEveryMemberOfItsJobExists(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(nil, []*v1.Node{gpuNode("a-1", "zone-a", 8)})
	first, second := member("llm", 0, 3, ""), member("llm", 1, 3, "")
	store := podStore(t, h, first, second)

	_, status := h.preFilter(first)
	if status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("two of three members exist: want UnschedulableAndUnresolvable, got %v", status)
	}
	if want := fmt.Sprintf(SiblingsFormat, "ml/llm", 2, 3); status.Message() != want {
		t.Fatalf("message %q, want %q", status.Message(), want)
	}
	if len(h.plugin.reservations) != 0 {
		t.Fatalf("a job waiting for its members holds nothing, got %v", h.plugin.reservations)
	}

	// A member being deleted does not count; a new one does.
	leaving := member("llm", 2, 3, "")
	now := metav1.NewTime(time.Now())
	leaving.DeletionTimestamp = &now
	if err := store.Add(leaving); err != nil {
		t.Fatal(err)
	}
	if _, status := h.preFilter(first); status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("a terminating member is not a member: got %v", status)
	}
	third := member("llm", 3, 3, "")
	if err := store.Add(third); err != nil {
		t.Fatal(err)
	}
	result, status := h.preFilter(first)
	if !status.IsSuccess() || !result.NodeNames.Has("a-1") {
		t.Fatalf("every member exists: want the zone planned, got %v %v", result, status)
	}
}

func TestTheMemberThatCompletesAJobSendsTheWaitingOnesBack(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(nil, []*v1.Node{gpuNode("a-1", "zone-a", 8)})
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	store := podStore(t, h, first)
	h.plugin.activateWhenComplete(first)
	if got := h.activator.names(); len(got) != 0 {
		t.Fatalf("one of two members exists: nothing to activate, got %v", got)
	}
	if err := store.Add(second); err != nil {
		t.Fatal(err)
	}
	h.plugin.activateWhenComplete(second)
	if got := h.activator.names(); len(got) != 1 || got[0] != "ml/llm-0" {
		t.Fatalf("the waiting member is activated when the job is complete, got %v", got)
	}
}

func TestAMemberOfAPlacedJobJoinsItWithoutWaitingForSiblings(t *testing.T) {
	// A job placed whole whose members then finished (gone from the informer) and one failed
	// and was recreated by its controller: the new member alone is scheduled.
	h := newHarness(t, nil)
	h.lister.set(nil, []*v1.Node{gpuNode("a-1", "zone-a", 8)})
	recreated := member("llm", 0, 4, "")
	podStore(t, h, recreated)
	h.plugin.order.set(recreated, "ml/llm", 4)
	h.plugin.order.markPlaced("ml/llm")
	if _, status := h.preFilter(recreated); !status.IsSuccess() {
		t.Fatalf("a placed job's recreated member is planned, got %v", status)
	}
}

func TestPreEnqueueKeepsAMemberOutOfTheQueueUntilItsJobExists(t *testing.T) {
	h := newHarness(t, nil)
	first, second := member("llm", 0, 3, ""), member("llm", 1, 3, "")
	store := podStore(t, h, first, second)
	status := h.plugin.PreEnqueue(context.Background(), first)
	if want := fmt.Sprintf(SiblingsFormat, "ml/llm", 2, 3); status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("two of three members exist: %v, want UnschedulableAndUnresolvable %q", status, want)
	}
	if status := h.plugin.PreEnqueue(context.Background(), filler("other", "", 1)); status != nil {
		t.Fatalf("a pod in no job: %v", status)
	}
	// A member bound already (the scheduler restarted, or a member was replaced): the job is
	// placed, so nothing waits.
	bound := member("llm", 2, 3, "a-1")
	bound.Name, bound.UID = "llm-bound", "uid-llm-bound"
	if err := store.Add(bound); err != nil {
		t.Fatal(err)
	}
	if status := h.plugin.PreEnqueue(context.Background(), first); status != nil {
		t.Fatalf("a job with a member bound: %v", status)
	}
	if err := store.Delete(bound); err != nil {
		t.Fatal(err)
	}
	if err := store.Add(member("llm", 2, 3, "")); err != nil {
		t.Fatal(err)
	}
	if status := h.plugin.PreEnqueue(context.Background(), first); status != nil {
		t.Fatalf("every member exists: %v", status)
	}
}
