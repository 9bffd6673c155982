package jobzone

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// gpuNode is a node in zone with gpus allocatable GPUs of 81920 MiB each.
func gpuNode(name, zone string, gpus int) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, gpupolicy.NodeMemoryLabel: "81920",
	}}}
	if zone != "" {
		node.Labels[zonepolicy.ZoneLabel] = zone
	}
	node.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("96"), v1.ResourceMemory: resource.MustParse("768Gi"),
		v1.ResourcePods: resource.MustParse("110"), gpupolicy.GPUResource: resource.MustParse(fmt.Sprint(gpus)),
	}
	return node
}

// member is pod index of job name (size members, one GPU each, 40960 MiB minimum),
// bound or assumed on nodeName when it is not empty.
func member(job string, index, size int, nodeName string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", job, index), Namespace: "ml", UID: types.UID(fmt.Sprintf("uid-%s-%d", job, index)),
			Labels: map[string]string{zonepolicy.JobLabel: job},
			Annotations: map[string]string{
				zonepolicy.ZonePolicyAnnotation: zonepolicy.SameZone, zonepolicy.JobSizeAnnotation: fmt.Sprint(size),
				gpupolicy.MinMemoryAnnotation: "40960",
			},
		},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{
			Name: "train", Image: "busybox:1.37.0",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("1"), gpupolicy.GPUResource: resource.MustParse("1"),
			}},
		}}},
	}
	return pod
}

// indexedMember is the pod of completion index of the Indexed Job name (uid), as the Job
// controller makes it: no job-size annotation, one GPU.
func indexedMember(name, uid string, index int) *v1.Pod {
	pod := member(name, index, 1, "")
	delete(pod.Annotations, zonepolicy.JobSizeAnnotation)
	pod.Annotations[zonepolicy.JobCompletionIndex] = fmt.Sprint(index)
	pod.Labels = map[string]string{
		zonepolicy.JobNameLabel: name, zonepolicy.JobControllerUIDLabel: uid, zonepolicy.JobCompletionIndex: fmt.Sprint(index),
	}
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "batch/v1", Kind: "Job", Name: name, UID: types.UID(uid), Controller: ptr.To(true),
	}}
	return pod
}

// indexedJob is the Indexed Job name (uid) in namespace ml.
func indexedJob(name, uid string, completions, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml", UID: types.UID(uid)},
		Spec:       batchv1.JobSpec{Completions: &completions, Parallelism: &parallelism, CompletionMode: ptr.To(batchv1.IndexedCompletion)},
	}
}

// filler takes gpus GPUs on nodeName (a pod of no job).
func filler(name, nodeName string, gpus int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "other", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{
			Name: "x", Image: "busybox:1.37.0",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{gpupolicy.GPUResource: resource.MustParse(fmt.Sprint(gpus))}},
		}}},
	}
}

// swappableLister is the framework's snapshot, replaced by a test between cycles as
// the scheduler's cache would be updated.
type swappableLister struct {
	mu       sync.Mutex
	snapshot *cache.Snapshot
}

func (l *swappableLister) set(pods []*v1.Pod, nodes []*v1.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.snapshot = cache.NewSnapshot(pods, nodes)
}

func (l *swappableLister) current() *cache.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshot
}

func (l *swappableLister) NodeInfos() fwk.NodeInfoLister       { return l.current().NodeInfos() }
func (l *swappableLister) StorageInfos() fwk.StorageInfoLister { return l.current().StorageInfos() }

// harness is a real framework with the plugin at PreFilter, Reserve and Permit, a
// snapshot the test sets, and the plugin's clock under the test's control.
type harness struct {
	t         testing.TB
	fw        framework.Framework
	plugin    *JobZone
	lister    *swappableLister
	clock     *clocktesting.FakeClock
	activator *recordingActivator
}

// recordingActivator stands for the scheduling queue: it records the pods a plugin sends
// back to the active queue.
type recordingActivator struct {
	mu        sync.Mutex
	activated []string
	// changed is signalled (without blocking) after each activation, for waitFor.
	changed chan struct{}
}

func (a *recordingActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name := range pods {
		a.activated = append(a.activated, name)
	}
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until the named pod was activated; the test fails if it never is.
func (a *recordingActivator) waitFor(t testing.TB, name string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !slices.Contains(a.names(), name) {
		select {
		case <-a.changed:
		case <-deadline:
			t.Fatalf("%s was never activated; activated %v", name, a.names())
		}
	}
}

// clear forgets the pods activated so far.
func (a *recordingActivator) clear() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.activated = nil
}

func (a *recordingActivator) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.activated...)
}

func newHarness(t testing.TB, args runtime.Object) *harness {
	t.Helper()
	return newHarnessWithClient(t, args, nil)
}

// newHarnessWithClient is newHarness whose framework handle has the given API client (nil:
// none), for what the plugin writes to the API.
func newHarnessWithClient(t testing.TB, args runtime.Object, client kubernetes.Interface) *harness {
	t.Helper()
	metrics.Register() // the framework records its plugins' metrics
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{
		t: t, lister: &swappableLister{}, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		activator: &recordingActivator{changed: make(chan struct{}, 1)},
	}
	h.lister.set(nil, nil)
	factory := func(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
		pl, err := newWithClock(ctx, obj, handle, h.clock)
		h.plugin = pl
		return pl, err
	}
	options := []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(h.lister),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodActivator(h.activator),
	}
	if client != nil {
		options = append(options, frameworkruntime.WithClientSet(client))
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Filter", "PostFilter", "Reserve", "Permit"),
	}, "default-scheduler", options...)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	h.fw = fw
	return h
}

// preFilter runs the plugin's PreFilter on the current snapshot.
func (h *harness) preFilter(pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status) {
	nodes, err := h.lister.NodeInfos().List()
	if err != nil {
		h.t.Fatal(err)
	}
	return h.plugin.PreFilter(context.Background(), framework.NewCycleState(), pod, nodes)
}

// permit runs the framework's Permit for pod on nodeName and returns the status. As in
// the scheduler's cycle, the pod is the assumed copy (its spec.nodeName set) and is not in
// the snapshot yet.
func (h *harness) permit(pod *v1.Pod, nodeName string) *fwk.Status {
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = nodeName
	return h.fw.RunPermitPlugins(context.Background(), framework.NewCycleState(), assumed, nodeName)
}

// permitKeeping runs the framework's Permit for pod on nodeName like permit, and returns the
// cycle's state too, for a later unreserveKeeping of the same cycle.
func (h *harness) permitKeeping(pod *v1.Pod, nodeName string) (*fwk.Status, fwk.CycleState) {
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = nodeName
	state := framework.NewCycleState()
	return h.fw.RunPermitPlugins(context.Background(), state, assumed, nodeName), state
}

// unreserveKeeping runs Unreserve for pod in the cycle whose state permitKeeping returned.
func (h *harness) unreserveKeeping(state fwk.CycleState, pod *v1.Pod, nodeName string) {
	h.fw.RunReservePluginsUnreserve(context.Background(), state, pod, nodeName)
}

// waitResult starts the framework's WaitOnPermit for a held pod, as a binding cycle does.
func (h *harness) waitResult(pod *v1.Pod) <-chan *fwk.Status {
	result := make(chan *fwk.Status, 1)
	go func() { result <- h.fw.WaitOnPermit(context.Background(), pod) }()
	return result
}

func (h *harness) unreserve(pod *v1.Pod, nodeName string) {
	h.fw.RunReservePluginsUnreserve(context.Background(), framework.NewCycleState(), pod, nodeName)
}

// receive is the status a WaitOnPermit returned; the test fails if it never returns.
func receive(t testing.TB, what string, result <-chan *fwk.Status) *fwk.Status {
	t.Helper()
	select {
	case status := <-result:
		return status
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: WaitOnPermit did not return", what)
		return nil
	}
}

func newQuantity(text string) *resource.Quantity {
	q := resource.MustParse(text)
	return &q
}

// zoneGivenUpForAJobOfTwo: the six-versus-eight cluster and a job of two whose first member's
// PostFilter gave its zone up (no node there passed the filters).
func zoneGivenUpForAJobOfTwo(t *testing.T) (*harness, *v1.Pod, *v1.Pod) {
	t.Helper()
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	first, second := member("llm", 0, 2, ""), member("llm", 1, 2, "")
	h.plugin.pods = podsLister(t, first, second)
	if _, status := h.postFilter(first); status.IsSuccess() {
		t.Fatalf("PostFilter: %v, want the zone given up", status)
	}
	return h, first, second
}
