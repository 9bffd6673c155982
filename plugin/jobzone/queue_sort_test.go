package jobzone

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

var queueEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// queued is pod as the scheduling queue holds it, entered at queueEpoch plus entered.
func queued(t *testing.T, pod *v1.Pod, entered time.Duration) fwk.QueuedPodInfo {
	t.Helper()
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &framework.QueuedPodInfo{PodInfo: info, Timestamp: queueEpoch.Add(entered)}
}

// created is member index of job, created at queueEpoch plus at.
func created(job string, index, size int, at time.Duration) *v1.Pod {
	pod := member(job, index, size, "")
	pod.CreationTimestamp = metav1.NewTime(queueEpoch.Add(at))
	return pod
}

// lone is a pod in no job, created at queueEpoch.
func lone(name string) *v1.Pod {
	pod := filler(name, "", 1)
	pod.CreationTimestamp = metav1.NewTime(queueEpoch)
	return pod
}

// sortedNames sorts the pods with the plugin's Less and returns their names.
func sortedNames(pl *JobZone, infos []fwk.QueuedPodInfo) []string {
	sort.SliceStable(infos, func(i, j int) bool { return pl.Less(infos[i], infos[j]) })
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = info.GetPodInfo().GetPod().Name
	}
	return names
}

// known tells the plugin's job order about pods, as its pod informer would.
func known(pl *JobZone, pods ...*v1.Pod) {
	for _, pod := range pods {
		key, size := pl.orderKey(pod)
		pl.order.set(pod, key, size)
	}
}

func TestLessKeepsJobsCreatedInTheSameSecondTogetherInNameOrder(t *testing.T) {
	pl := newHarness(t, nil).plugin
	var infos []fwk.QueuedPodInfo
	var pods []*v1.Pod
	// beta's and alpha's members are created and queued interleaved, beta first.
	for i := 0; i < 3; i++ {
		for _, job := range []string{"beta", "alpha"} {
			pod := created(job, i, 3, 0)
			pods = append(pods, pod)
			infos = append(infos, queued(t, pod, time.Duration(len(infos))*time.Millisecond))
		}
	}
	known(pl, pods...)
	got := fmt.Sprint(sortedNames(pl, infos))
	if want := "[alpha-0 alpha-1 alpha-2 beta-0 beta-1 beta-2]"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
}

func TestLessPutsTheJobCreatedFirstFirstWhateverItsMembersQueueTimes(t *testing.T) {
	pl := newHarness(t, nil).plugin
	// zeta's first member was created a second before alpha's; its later members were
	// created after alpha's and queued last.
	zeta0, zeta1 := created("zeta", 0, 2, 0), created("zeta", 1, 2, 3*time.Second)
	alpha0, alpha1 := created("alpha", 0, 2, time.Second), created("alpha", 1, 2, time.Second)
	known(pl, zeta0, zeta1, alpha0, alpha1)
	infos := []fwk.QueuedPodInfo{queued(t, alpha0, 1), queued(t, zeta1, 4), queued(t, alpha1, 2), queued(t, zeta0, 3)}
	got := fmt.Sprint(sortedNames(pl, infos))
	if want := "[zeta-0 zeta-1 alpha-0 alpha-1]"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
}

func TestLessKeepsPrioritySortOrderForPodsInNoJob(t *testing.T) {
	pl := newHarness(t, nil).plugin
	late, early, urgent := lone("late"), lone("early"), lone("urgent")
	high := int32(1000)
	urgent.Spec.Priority = &high
	infos := []fwk.QueuedPodInfo{queued(t, late, 3*time.Second), queued(t, early, time.Second), queued(t, urgent, 5*time.Second)}
	got := fmt.Sprint(sortedNames(pl, infos))
	if want := "[urgent early late]"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
}

func TestLessPutsPriorityBeforeAJobsPlace(t *testing.T) {
	pl := newHarness(t, nil).plugin
	old, urgent := created("old", 0, 1, 0), lone("urgent")
	high := int32(1000)
	urgent.Spec.Priority = &high
	known(pl, old)
	infos := []fwk.QueuedPodInfo{queued(t, old, 0), queued(t, urgent, time.Hour)}
	if got := fmt.Sprint(sortedNames(pl, infos)); got != "[urgent old-0]" {
		t.Errorf("order = %s, want the higher priority first", got)
	}
}

func TestLessPlacesAJobBetweenPodsInNoJobByWhenItWasCreated(t *testing.T) {
	pl := newHarness(t, nil).plugin
	job0 := created("job", 0, 2, 2*time.Second)
	job1 := created("job", 1, 2, 2*time.Second)
	known(pl, job0, job1)
	// job-1 entered the queue again after a failure, at 10 s: its job still stands at 2 s.
	infos := []fwk.QueuedPodInfo{
		queued(t, lone("before"), time.Second), queued(t, job1, 10*time.Second),
		queued(t, lone("after"), 3*time.Second), queued(t, job0, 2*time.Second),
	}
	got := fmt.Sprint(sortedNames(pl, infos))
	if want := "[before job-0 job-1 after]"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
}

func TestAJobKeepsItsPlaceWhileAnyMemberExists(t *testing.T) {
	pl := newHarness(t, nil).plugin
	first, second := created("job", 0, 2, 0), created("job", 1, 2, time.Minute)
	known(pl, first, second)
	pl.order.forget(first.UID)
	// The controller creates member 0 again, a minute and a half later.
	again := created("job", 0, 2, 90*time.Second)
	again.UID = types.UID("uid-job-0-again")
	known(pl, again)
	if since, ok := pl.order.firstCreated("ml/job"); !ok || !since.Equal(queueEpoch) {
		t.Errorf("first created = %v, %v; want the first member's %v", since, ok, queueEpoch)
	}
	pl.order.forget(second.UID)
	pl.order.forget(again.UID)
	if _, ok := pl.order.firstCreated("ml/job"); ok {
		t.Error("a job with no member left is still known")
	}
}

func TestAPodMovedToAnotherJobLeavesItsOldJob(t *testing.T) {
	pl := newHarness(t, nil).plugin
	pod := created("old", 0, 1, 0)
	known(pl, pod)
	moved := pod.DeepCopy()
	moved.Labels[zonepolicy.JobLabel] = "new"
	known(pl, moved)
	if _, ok := pl.order.firstCreated("ml/old"); ok {
		t.Error("the old job still counts the moved pod")
	}
	if _, ok := pl.order.firstCreated("ml/new"); !ok {
		t.Error("the new job does not know its member")
	}
	delete(moved.Annotations, zonepolicy.ZonePolicyAnnotation)
	delete(moved.Annotations, zonepolicy.JobSizeAnnotation)
	known(pl, moved)
	if _, ok := pl.order.firstCreated("ml/new"); ok {
		t.Error("a pod that left every job still holds its job's place")
	}
}

// TestLessIsAStrictWeakOrder checks irreflexivity, asymmetry and transitivity (of Less
// and of incomparability) on random mixes of members and pods in no job, which the
// queue's heap relies on.
func TestLessIsAStrictWeakOrder(t *testing.T) {
	pl := newHarness(t, nil).plugin
	random := rand.New(rand.NewSource(7))
	var infos []fwk.QueuedPodInfo
	for i := 0; i < 24; i++ {
		var pod *v1.Pod
		if random.Intn(3) == 0 {
			pod = lone(fmt.Sprintf("lone-%d", i))
		} else {
			job := fmt.Sprintf("job-%d", random.Intn(4))
			pod = created(job, i, 8, time.Duration(random.Intn(3))*time.Second)
			known(pl, pod)
		}
		if random.Intn(4) == 0 {
			priority := int32(random.Intn(2) * 100)
			pod.Spec.Priority = &priority
		}
		infos = append(infos, queued(t, pod, time.Duration(random.Intn(4))*time.Second))
	}
	less := func(i, j int) bool { return pl.Less(infos[i], infos[j]) }
	equivalent := func(i, j int) bool { return !less(i, j) && !less(j, i) }
	for i := range infos {
		if less(i, i) {
			t.Fatalf("Less(%d, %d) is true", i, i)
		}
		for j := range infos {
			if less(i, j) && less(j, i) {
				t.Fatalf("Less(%d, %d) and Less(%d, %d) are both true", i, j, j, i)
			}
			for k := range infos {
				if less(i, j) && less(j, k) && !less(i, k) {
					t.Fatalf("Less is not transitive on %d, %d, %d", i, j, k)
				}
				if equivalent(i, j) && equivalent(j, k) && !equivalent(i, k) {
					t.Fatalf("incomparability is not transitive on %d, %d, %d", i, j, k)
				}
			}
		}
	}
}

func TestPreFilterRefusesAJobWhoseMembersDeclareDifferentSizes(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	four, eight := created("llm", 0, 4, 0), created("llm", 1, 8, 0)
	known(h.plugin, four, eight)
	_, status := h.preFilter(four)
	want := "job ml/llm: its members declare different sizes [4 8]; every member must declare the same training.example.com/job-size"
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("status %v, want UnschedulableAndUnresolvable %q", status, want)
	}
	// The odd member is being deleted (the job created again with another size): it no
	// longer counts, and the job is planned.
	deleting := eight.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: queueEpoch}
	known(h.plugin, deleting)
	if _, status := h.preFilter(four); !status.IsSuccess() {
		t.Fatalf("after the odd member began to be deleted: status %v", status)
	}
	h.plugin.order.forget(deleting.UID)
	if sizes := h.plugin.order.declaredSizes("ml/llm"); fmt.Sprint(sizes) != "[4]" {
		t.Fatalf("sizes %v, want [4]", sizes)
	}
}
