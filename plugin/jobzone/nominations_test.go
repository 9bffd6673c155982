package jobzone

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// nominated is a copy of pod whose status names node as its nominated node.
func nominated(pod *v1.Pod, node string) *v1.Pod {
	copied := pod.DeepCopy()
	copied.Status.NominatedNodeName = node
	return copied
}

// eventually waits until condition holds; the test fails if it does not within a deadline.
func eventually(t *testing.T, what string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with the deadline above
	}
}

func nominationOf(t *testing.T, client *fake.Clientset, pod *v1.Pod) string {
	t.Helper()
	current, err := client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return current.Status.NominatedNodeName
}

func statusPatches(client *fake.Clientset) int {
	count := 0
	for _, action := range client.Actions() {
		if patch, ok := action.(clienttesting.PatchAction); ok && patch.GetSubresource() == "status" {
			count++
		}
	}
	return count
}

// TestAnUnreservedMemberLosesItsNomination: kube-scheduler nominated the held member to its
// node before the Permit wait and does not take that back when the member is rejected; JobZone
// clears it at Unreserve, so Karpenter provisions for the member again.
func TestAnUnreservedMemberLosesItsNomination(t *testing.T) {
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	client := fake.NewClientset(nominated(first, "b1"), second)
	h := newHarnessWithClient(t, nil, client)
	h.lister.set(sixVersusEight())
	h.plugin.pods = podsLister(t, first, second)
	h.unreserve(first, "b1")
	eventually(t, "the member's nomination cleared", func() bool { return nominationOf(t, client, first) == "" })
}

// TestANominationOfAnotherNodeIsKept: the member was nominated again (a new hold, another node)
// before JobZone's write came: the write changes nothing.
func TestANominationOfAnotherNodeIsKept(t *testing.T) {
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	client := fake.NewClientset(nominated(first, "a1"), second)
	h := newHarnessWithClient(t, nil, client)
	h.lister.set(sixVersusEight())
	h.plugin.pods = podsLister(t, first, second)
	h.unreserve(first, "b1")
	eventually(t, "JobZone's write", func() bool { return statusPatches(client) == 1 })
	if got := nominationOf(t, client, first); got != "a1" {
		t.Fatalf("nomination %q, want a1 kept", got)
	}
}

// TestAPodInNoJobIsNotWritten: JobZone writes nothing for a pod outside any job.
func TestAPodInNoJobIsNotWritten(t *testing.T) {
	plain := nominated(filler("plain", "", 1), "b1")
	client := fake.NewClientset(plain)
	h := newHarnessWithClient(t, nil, client)
	h.lister.set(sixVersusEight())
	h.unreserve(plain, "b1")
	if got := statusPatches(client); got != 0 {
		t.Fatalf("%d status writes for a pod in no job", got)
	}
}
