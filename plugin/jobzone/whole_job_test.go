package jobzone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// launcher is job's CPU-only member: no GPU, no GPU-memory minimum, no GPU toleration.
func launcher(job string, size int) *v1.Pod {
	pod := member(job, 0, size, "")
	pod.Name = job + "-launcher"
	pod.UID = types.UID("uid-" + pod.Name)
	delete(pod.Annotations, gpupolicy.MinMemoryAnnotation)
	delete(pod.Spec.Containers[0].Resources.Requests, gpupolicy.GPUResource)
	return pod
}

// A job of a CPU launcher and 4 one-GPU workers. A has CPU only, B one node of 4 GPUs: no
// zone holds 5 copies of a worker, yet B holds the job. Whichever member is scheduled first
// plans B.
func TestAMixedJobIsPlannedWithEveryMember(t *testing.T) {
	h := newHarness(t, nil)
	members := []*v1.Pod{launcher("mpi", 5)}
	for index := 1; index < 5; index++ {
		members = append(members, member("mpi", index, 5, ""))
	}
	podStore(t, h, members...)
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "a", 0), gpuNode("b1", "b", 4)})
	for _, first := range []*v1.Pod{members[1], members[0]} {
		result, status := h.preFilter(first)
		if !status.IsSuccess() || !result.NodeNames.Has("b1") || result.NodeNames.Has("a1") {
			t.Fatalf("%s: %v %v, want B", first.Name, result, status)
		}
		h.plugin.mu.Lock()
		h.plugin.release(jobKey(first, h.plugin.jobOf(nil, first)))
		h.plugin.mu.Unlock()
	}
	// With 8 GPUs in A, both zones hold the job; B, with nothing to spare, is the tightest fit.
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "a", 8), gpuNode("b1", "b", 4)})
	if result, status := h.preFilter(members[2]); !status.IsSuccess() || !result.NodeNames.Has("b1") {
		t.Fatalf("tightest fit: %v %v, want B", result, status)
	}
}

// A zone that holds the workers but not all of them beside the launcher is not planned;
// the message counts the members each zone holds.
func TestAMixedJobNoZoneHolds(t *testing.T) {
	h := newHarness(t, nil)
	members := []*v1.Pod{launcher("mpi", 5)}
	for index := 1; index < 5; index++ {
		members = append(members, member("mpi", index, 5, ""))
	}
	podStore(t, h, members...)
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "a", 3), gpuNode("b1", "b", 2)})
	_, status := h.preFilter(members[1])
	if want := "no zone can hold all 5 pods of the job: a 4, b 3"; status.Message() != want {
		t.Fatalf("status %v, want %q", status, want)
	}
}

func TestWholeJobInCountsEveryMemberOnce(t *testing.T) {
	h := newHarness(t, nil)
	c := h.plugin.config
	shapes := []podShape{newPodShape(launcher("j", 3), c), newPodShape(member("j", 1, 3, ""), c), newPodShape(member("j", 2, 3, ""), c)}
	info := framework.NewNodeInfo()
	info.SetNode(gpuNode("n1", "a", 4))
	infos := []fwk.NodeInfo{info}
	if got := wholeJobIn(klog.Background(), infos, shapes, 0, c); got != 3+2 {
		t.Errorf("all placed with 2 GPUs to spare: %d, want 5", got)
	}
	if got := wholeJobIn(klog.Background(), infos, shapes, 3, c); got != 2 {
		t.Errorf("3 GPUs reserved by another job: %d, want 2 placed", got)
	}
}
