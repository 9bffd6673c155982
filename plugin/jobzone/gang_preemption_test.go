package jobzone

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
)

// jobOf is the members of job name (size members, one GPU each) at priority, placed on the
// nodes given in order (pending for the rest).
func jobOf(name string, size int, priority int32, nodes ...string) []*v1.Pod {
	pods := make([]*v1.Pod, size)
	for i := range pods {
		node := ""
		if i < len(nodes) {
			node = nodes[i]
		}
		pods[i] = withPriority(member(name, i, size, node), priority)
	}
	return pods
}

// fillers are count pods in no job of one GPU each at priority on node, named prefix-i.
func fillers(prefix string, count int, priority int32, node string) []*v1.Pod {
	pods := make([]*v1.Pod, count)
	for i := range pods {
		pods[i] = withPriority(filler(fmt.Sprintf("%s-%d", prefix, i), node, 1), priority)
	}
	return pods
}

// repeat is node n times.
func repeat(node string, n int) []string {
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = node
	}
	return nodes
}

// names is the pods' names.
func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, pod := range pods {
		out[i] = pod.Name
	}
	return out
}

// jobPostFilter runs a member's PreFilter, which must find no zone for its job, then JobZone's
// PostFilter, and returns PostFilter's status.
func (s *preemptionScene) jobPostFilter(t *testing.T, pod *v1.Pod) *fwk.Status {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, status, _ := s.fw.RunPreFilterPlugins(ctx, state, pod); status.IsSuccess() {
		t.Fatalf("PreFilter found a zone for %s; the scene must leave its job none", pod.Name)
	}
	nodes, err := s.fw.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	statuses := framework.NewDefaultNodeToStatus()
	for _, node := range nodes {
		statuses.Set(node.Node().Name, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no zone"))
	}
	result, status := s.plugin.PostFilter(ctx, state, pod, statuses)
	if result != nil && result.NominatedNodeName != "" {
		t.Fatalf("a job's member was nominated to %s alone", result.NominatedNodeName)
	}
	return status
}

func TestAJobThatFitsNowherePreemptsALowerPriorityJobWholeInOneZone(t *testing.T) {
	nodes := []*v1.Node{
		gpuNode("a1", "us-east-1a", 4), gpuNode("a2", "us-east-1a", 4),
		gpuNode("b1", "us-east-1b", 4), gpuNode("b2", "us-east-1b", 4),
	}
	experiment := jobOf("exp", 8, 0, append(repeat("a1", 4), repeat("a2", 4)...)...)
	services := append(fillers("svc-b1", 4, 500, "b1"), fillers("svc-b2", 4, 500, "b2")...)
	llm := jobOf("llm", 8, 1_000_000)
	scene := newPreemptionScene(t, nodes, slices.Concat(experiment, services, llm))

	status := scene.jobPostFilter(t, llm[0])
	want := fmt.Sprintf(JobPreemptedFormat, "ml/llm", 8, "us-east-1a")
	if status.Code() != fwk.Unschedulable || status.Message() != want {
		t.Fatalf("PostFilter: %v (%s), want Unschedulable %q", status, status.Code(), want)
	}
	if got := scene.deleted(t, slices.Concat(experiment, services)...); !slices.Equal(got, names(experiment)) {
		t.Fatalf("deleted %v, want the whole priority-0 job and no pod of priority 500", got)
	}
}

func TestAMemberNeverPreemptsForItselfAloneWhileItsJobCannotFit(t *testing.T) {
	// Zone a holds 4 GPUs, all taken by low-priority pods; the job of 8 would not fit there
	// even without them, so nothing is evicted, though one member alone would fit.
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 4)}
	low := fillers("low", 4, 0, "a1")
	llm := jobOf("llm", 8, 1_000_000)
	scene := newPreemptionScene(t, nodes, slices.Concat(low, llm))

	status := scene.jobPostFilter(t, llm[0])
	want := fmt.Sprintf(JobNoPreemptionFormat, "ml/llm")
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("PostFilter: %v (%s), want UnschedulableAndUnresolvable %q", status, status.Code(), want)
	}
	if got := scene.deleted(t, low...); len(got) != 0 {
		t.Fatalf("deleted %v, want none", got)
	}
}

func TestAJobPreemptsTheFewestAndLeastImportantPods(t *testing.T) {
	// a1 has 4 GPUs: one free, one pod of priority 10, one of 500, one of 600. A job of 2 needs
	// one more GPU: the priority-10 pod is the one victim.
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 4)}
	lowest := fillers("lowest", 1, 10, "a1")
	middle := fillers("middle", 1, 500, "a1")
	upper := fillers("upper", 1, 600, "a1")
	pair := jobOf("pair", 2, 1000)
	scene := newPreemptionScene(t, nodes, slices.Concat(lowest, middle, upper, pair))

	if status := scene.jobPostFilter(t, pair[0]); status.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter: %v (%s), want Unschedulable after preempting", status, status.Code())
	}
	if got := scene.deleted(t, slices.Concat(lowest, middle, upper)...); !slices.Equal(got, []string{"lowest-0"}) {
		t.Fatalf("deleted %v, want only lowest-0", got)
	}
}

func TestAJobPreemptsAroundADisruptionBudgetAsKubeSchedulerDoes(t *testing.T) {
	// Without a budget the least important pod (guarded, priority 50) would be the victim; its
	// budget allows no disruption, so kube-scheduler's order reprieves it first and takes the
	// pod of priority 100 instead.
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 3)}
	guarded := withPriority(filler("guarded", "a1", 1), 50)
	guarded.Labels = map[string]string{"app": "guarded"}
	plain := withPriority(filler("plain", "a1", 1), 100)
	pair := jobOf("pair", 2, 1000)
	budget := &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "other"},
		Spec:       policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: guarded.Labels}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	scene := newPreemptionScene(t, nodes, slices.Concat([]*v1.Pod{guarded, plain}, pair), budget)

	if status := scene.jobPostFilter(t, pair[0]); status.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter: %v (%s), want Unschedulable after preempting", status, status.Code())
	}
	if got := scene.deleted(t, guarded, plain); !slices.Equal(got, []string{"plain"}) {
		t.Fatalf("deleted %v, want plain (guarded's budget allows no disruption)", got)
	}
}

func TestAJobAtOrAboveTheJobsPriorityIsNoVictimOfIt(t *testing.T) {
	// Zone a is filled by a job of 2 with one member at the preemptor job's own priority: the
	// whole job outranks it, so nothing is evicted.
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 2)}
	running := jobOf("running", 2, 100, "a1", "a1")
	running[1].Spec.Priority = ptr.To[int32](1000)
	pair := jobOf("pair", 2, 1000)
	scene := newPreemptionScene(t, nodes, slices.Concat(running, pair))

	status := scene.jobPostFilter(t, pair[0])
	if status.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(status.Message(), "preemption would not make room") {
		t.Fatalf("PostFilter: %v (%s), want no preemption", status, status.Code())
	}
	if got := scene.deleted(t, running...); len(got) != 0 {
		t.Fatalf("deleted %v, want none", got)
	}
}

func TestAJobPreemptsWithItsLowestMembersPriority(t *testing.T) {
	// One member of the pending job has priority 100, as the running pod does: the job as a
	// whole does not outrank it.
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 2)}
	running := fillers("running", 2, 100, "a1")
	pair := jobOf("pair", 2, 1000)
	pair[1].Spec.Priority = ptr.To[int32](100)
	scene := newPreemptionScene(t, nodes, slices.Concat(running, pair))

	if status := scene.jobPostFilter(t, pair[0]); status.IsSuccess() || status.Code() == fwk.Unschedulable {
		t.Fatalf("PostFilter: %v (%s), want no preemption", status, status.Code())
	}
	if got := scene.deleted(t, running...); len(got) != 0 {
		t.Fatalf("deleted %v, want none", got)
	}
}

func TestAJobWithAMemberThatNeverPreemptsPreemptsNothing(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 2)}
	running := fillers("running", 2, 0, "a1")
	pair := jobOf("pair", 2, 1000)
	pair[1].Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	scene := newPreemptionScene(t, nodes, slices.Concat(running, pair))

	status := scene.jobPostFilter(t, pair[0])
	want := fmt.Sprintf(JobPreemptNeverFormat, "ml/pair", "ml/pair-1")
	if status.Message() != want {
		t.Fatalf("PostFilter: %v, want %q", status, want)
	}
	if got := scene.deleted(t, running...); len(got) != 0 {
		t.Fatalf("deleted %v, want none", got)
	}
}

func TestAJobNotWhollyCreatedPreemptsNothing(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 2)}
	running := fillers("running", 2, 0, "a1")
	pair := jobOf("pair", 2, 1000)
	scene := newPreemptionScene(t, nodes, slices.Concat(running, pair[:1]))

	if status := scene.jobPostFilter(t, pair[0]); status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("PostFilter: %v (%s), want UnschedulableAndUnresolvable", status, status.Code())
	}
	if got := scene.deleted(t, running...); len(got) != 0 {
		t.Fatalf("deleted %v, want none (one member of two exists)", got)
	}
}

func TestAVictimJobIsEvictedWholeEvenWhereItsMembersFreeNothingForThePreemptor(t *testing.T) {
	// Job exp has one member in zone a and one in zone b; the job of 2 needs both of a1's GPUs.
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 2), gpuNode("b1", "us-east-1b", 1)}
	experiment := jobOf("exp", 2, 0, "a1", "b1")
	low := fillers("low", 1, 0, "a1")
	pair := jobOf("pair", 2, 1000)
	scene := newPreemptionScene(t, nodes, slices.Concat(experiment, low, pair))

	if status := scene.jobPostFilter(t, pair[0]); status.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter: %v (%s), want Unschedulable after preempting", status, status.Code())
	}
	if got := scene.deleted(t, slices.Concat(experiment, low)...); !slices.Equal(got, []string{"exp-0", "exp-1", "low-0"}) {
		t.Fatalf("deleted %v, want both members of exp (one in zone b) and low-0", got)
	}
}

func TestAJobWaitsForItsVictimsToLeaveBeforeItPreemptsAgain(t *testing.T) {
	leaving := withPriority(filler("leaving", "a1", 1), 0)
	leaving.DeletionTimestamp = &metav1.Time{}
	kept := withPriority(filler("kept", "a1", 1), 0)
	h := newHarness(t, nil)
	h.plugin.pods = podsLister(t, leaving, kept)
	h.plugin.recordVictims("ml/pair", "us-east-1a", []*v1.Pod{leaving, kept})
	if zone, left := h.plugin.victimsLeft("ml/pair"); zone != "us-east-1a" || left != 1 {
		t.Fatalf("victimsLeft = %q, %d; want us-east-1a, 1 (the victim being deleted; the other was never marked)", zone, left)
	}
	h.plugin.pods = podsLister(t, kept)
	if _, left := h.plugin.victimsLeft("ml/pair"); left != 0 {
		t.Fatalf("victimsLeft = %d once the victim is gone, want 0", left)
	}
	if _, recorded := h.plugin.jobPreemptions.pending["ml/pair"]; recorded {
		t.Fatal("the job's victims are still recorded once none is left")
	}
}
