package jobzone

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

func TestEventsToRegister(t *testing.T) {
	h := newHarness(t, nil)
	events, err := h.plugin.EventsToRegister(context.Background())
	if err != nil || len(events) != 4 {
		t.Fatalf("events %v, error %v", events, err)
	}
	if events[0].Event.Resource != fwk.Node || events[0].QueueingHintFn != nil {
		t.Errorf("the first event must be any Node change, always queued: %+v", events[0].Event)
	}
	if events[3].Event.Resource != "jobs.v1.batch" || events[3].Event.ActionType != fwk.Add|fwk.Update {
		t.Errorf("the last event must be a Job added or updated: %+v", events[3].Event)
	}
}

func TestJobChangeHint(t *testing.T) {
	h := newHarness(t, nil)
	logger := klog.Background()
	pending := indexedMember("ft", "uid-ft", 1)
	for _, tt := range []struct {
		name    string
		pod     *v1.Pod
		changed any
		want    fwk.QueueingHint
	}{
		{"the pod's own Job", pending, indexedJob("ft", "uid-ft", 2, 2), fwk.Queue},
		{"another Job", pending, indexedJob("other", "uid-other", 2, 2), fwk.QueueSkip},
		{"a Job of the same name in another namespace", pending, func() *batchv1.Job {
			job := indexedJob("ft", "uid-ft", 2, 2)
			job.Namespace = "elsewhere"
			return job
		}(), fwk.QueueSkip},
		{"a pod whose size is its annotation", member("llm", 0, 2, ""), indexedJob("llm", "uid-llm", 2, 2), fwk.QueueSkip},
	} {
		got, err := h.plugin.isSchedulableAfterJobChange(logger, tt.pod, nil, tt.changed)
		if err != nil || got != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := h.plugin.isSchedulableAfterJobChange(logger, pending, nil, "not a Job"); err == nil {
		t.Error("no error for an object that is not a Job")
	}
}

// PreFilter reads an Indexed Job's size from the Job in the informer's cache, and tells
// why when the Job that made the pod is gone.
func TestIndexedJobSizeFromItsJob(t *testing.T) {
	h := newHarness(t, nil)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	h.plugin.jobs = batchlisters.NewJobLister(indexer)
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "a", 8)})
	pod := indexedMember("ft", "uid-ft", 0)
	if _, status := h.preFilter(pod); status.Code() != fwk.UnschedulableAndUnresolvable ||
		status.Message() != fmt.Sprintf(zonepolicy.OwnerJobMissingFormat, "ft") {
		t.Fatalf("without its Job: %v, want the Job missing", status)
	}
	if err := indexer.Add(indexedJob("ft", "uid-ft", 2, 2)); err != nil {
		t.Fatal(err)
	}
	job, err := h.plugin.jobFromPod(pod)
	if err != nil || job.Size != 2 || job.SizeFrom != zonepolicy.SizeFromCompletions {
		t.Fatalf("job = %+v, %v; want size 2 from spec.completions", job, err)
	}
	if err := indexer.Update(indexedJob("ft", "uid-other", 2, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.plugin.jobFromPod(pod); err == nil {
		t.Fatal("a Job created again under the pod's Job's name gave the pod a size")
	}
}

func TestPodDeleteHint(t *testing.T) {
	h := newHarness(t, nil)
	logger := klog.Background()
	pending := member("llm", 1, 8, "")
	cpuOnly := filler("cpu", "b1", 0)
	for _, tt := range []struct {
		name    string
		deleted any
		want    fwk.QueueingHint
	}{
		{"a member of the job", member("llm", 0, 8, "b1"), fwk.Queue},
		{"a pod that held GPUs", filler("gpu", "b1", 2), fwk.Queue},
		{"a pod without GPUs in another job", cpuOnly, fwk.QueueSkip},
	} {
		got, err := h.plugin.isSchedulableAfterPodDelete(logger, pending, tt.deleted, nil)
		if err != nil || got != tt.want {
			t.Errorf("%s: %v %v, want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := h.plugin.isSchedulableAfterPodDelete(logger, pending, "not a pod", nil); err == nil {
		t.Error("no error for an object that is not a pod")
	}
}

func TestPodUpdateHint(t *testing.T) {
	h := newHarness(t, nil)
	logger := klog.Background()
	pending := member("llm", 1, 8, "")
	if got, _ := h.plugin.isSchedulableAfterPodUpdate(logger, pending, nil, pending.DeepCopy()); got != fwk.Queue {
		t.Errorf("the pod itself updated: %v, want Queue", got)
	}
	if got, _ := h.plugin.isSchedulableAfterPodUpdate(logger, pending, nil, member("llm", 2, 8, "")); got != fwk.QueueSkip {
		t.Errorf("another pod updated: %v, want QueueSkip", got)
	}
}
