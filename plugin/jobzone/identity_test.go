package jobzone

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// fromController is a member of a job whose identity comes from controller labels: the
// pod as the controller makes it, with only the zone-policy annotation from the pod
// template (and annotations, such as a LeaderWorkerSet's size, the controller writes).
func fromController(name, nodeName string, labels, annotations map[string]string) *v1.Pod {
	pod := member(name, 0, 1, nodeName)
	pod.Name, pod.UID = name, types.UID("uid-"+name)
	pod.Labels = labels
	pod.Annotations = map[string]string{zonepolicy.ZonePolicyAnnotation: zonepolicy.SameZone}
	for key, value := range annotations {
		pod.Annotations[key] = value
	}
	return pod
}

// lwsPod is worker of group of LeaderWorkerSet "llama", groups of two pods.
func lwsPod(group string, worker int, nodeName string) *v1.Pod {
	return fromController(fmt.Sprintf("llama-%s-%d", group, worker), nodeName,
		map[string]string{zonepolicy.LWSNameLabel: "llama", zonepolicy.LWSGroupIndexLabel: group},
		map[string]string{zonepolicy.LWSSizeAnnotation: "2"})
}

// TestALeaderWorkerSetGroupIsPlacedWholeByItsLabels: a group's pods carry no job label and
// no job-size annotation; the group is the job, its size LeaderWorkerSet's annotation. A pod
// of another group in the zone does not complete it.
func TestALeaderWorkerSetGroupIsPlacedWholeByItsLabels(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	pods = append(pods, lwsPod("1", 0, "a1"))
	h.lister.set(pods, nodes)
	leader, worker := lwsPod("0", 0, ""), lwsPod("0", 1, "")
	result, status := h.preFilter(leader)
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("c1")) {
		t.Fatalf("plan %v (%v), want zone c (the tightest that holds 2; group 1 is another job)", result, status)
	}
	if status := h.permit(leader, "a1"); status.Code() != fwk.Wait {
		t.Fatalf("leader: %v, want Wait (group 1's pod in the zone is another job)", status)
	}
	leaderDone := h.waitResult(leader)
	h.lister.set(append(pods, lwsPod("0", 0, "a1")), nodes)
	if status := h.permit(worker, "a1"); !status.IsSuccess() {
		t.Fatalf("worker: %v, want Success (the group of 2 is placed)", status)
	}
	if status := receive(t, "leader", leaderDone); !status.IsSuccess() {
		t.Fatalf("leader: %v, want allowed", status)
	}
}

// TestJobsOfDifferentSourcesWithOneNameAreApart: our label "train" and the JobSet "train"
// in one namespace are two jobs, in the queue's order and in the size index.
func TestJobsOfDifferentSourcesWithOneNameAreApart(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	ours := created("train", 0, 4, 0)
	jobset := fromController("train-workers-0-0", "", map[string]string{zonepolicy.JobSetNameLabel: "train"},
		map[string]string{zonepolicy.JobSizeAnnotation: "8"})
	known(h.plugin, ours, jobset)
	if key, _ := h.plugin.orderKey(jobset); key != "ml/jobset/train" {
		t.Fatalf("JobSet's job key %q, want ml/jobset/train", key)
	}
	if sizes := fmt.Sprint(h.plugin.order.declaredSizes("ml/train"), h.plugin.order.declaredSizes("ml/jobset/train")); sizes != "[4] [8]" {
		t.Fatalf("sizes %s, want [4] [8]", sizes)
	}
	if _, status := h.preFilter(ours); !status.IsSuccess() {
		t.Fatalf("our job: %v, want planned (the JobSet's size is another job's)", status)
	}
}

// TestAControllersJobWithoutASizeIsRefused: a JobSet's size is only on the JobSet, so a
// member without the job-size annotation stays Pending, saying where to put it.
func TestAControllersJobWithoutASizeIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	pod := fromController("train-workers-0-0", "", map[string]string{zonepolicy.JobSetNameLabel: "train"}, nil)
	_, status := h.preFilter(pod)
	want := fmt.Sprintf(zonepolicy.SizeNotOnPodFormat, "a JobSet", zonepolicy.JobSizeAnnotation)
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("status %v, want UnschedulableAndUnresolvable %q", status, want)
	}
}
