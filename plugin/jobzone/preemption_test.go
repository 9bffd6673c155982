package jobzone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/apis/scheduling"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

func TestPreemptionNeverEvictsABoundMemberOfAJob(t *testing.T) {
	h := newHarness(t, nil)
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 8)}
	held := member("held", 0, 2, "")
	h.lister.set(nil, nodes)
	if status := h.permit(held, "a1"); status.Code() != fwk.Wait {
		t.Fatalf("Permit for the first of 2: %v, want Wait", status)
	}
	t.Cleanup(func() { h.fw.RejectWaitingPod(held.UID) })

	preemptor := filler("urgent", "", 8)
	critical := preemptor.DeepCopy()
	critical.Spec.Priority = new(int32)
	*critical.Spec.Priority = scheduling.SystemCriticalPriority
	alone := member("alone", 0, 1, "a1")
	for _, tt := range []struct {
		name      string
		victim    *v1.Pod
		preemptor *v1.Pod
		want      bool
	}{
		{"a bound member of a job of 4", member("llm", 0, 4, "a1"), preemptor, false},
		{"a bound member of an Indexed Job whose Job is not known", indexedMember("ij-0", "uid-ij", 0), preemptor, true},
		{"a pod in no job", filler("other", "a1", 1), preemptor, true},
		{"a job of one pod", alone, preemptor, true},
		{"a member held at Permit: the whole job is released", held, preemptor, true},
		{"a bound member, for a system-critical pod", member("llm", 1, 4, "a1"), critical, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			victim, err := framework.NewPodInfo(tt.victim)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.plugin.mayEvict(nil, victim, tt.preemptor); got != tt.want {
				t.Fatalf("mayEvict = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTheSharedRuleUsesKubeSchedulersSystemCriticalPriority(t *testing.T) {
	if zonepolicy.SystemCriticalPriority != scheduling.SystemCriticalPriority {
		t.Fatalf("zonepolicy.SystemCriticalPriority = %d, kube-scheduler's is %d", zonepolicy.SystemCriticalPriority, scheduling.SystemCriticalPriority)
	}
}
