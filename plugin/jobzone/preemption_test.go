package jobzone

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientcache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
	"k8s.io/utils/ptr"
)

// withPriority sets the pod's spec.priority, as the Priority admission plugin does.
func withPriority(pod *v1.Pod, priority int32) *v1.Pod {
	pod.Spec.Priority = ptr.To(priority)
	return pod
}

// podsLister is a pod lister over pods, with the namespace index the plugin gives the
// scheduler's informer.
func podsLister(t *testing.T, pods ...*v1.Pod) corelisters.PodLister {
	t.Helper()
	indexer := clientcache.NewIndexer(clientcache.MetaNamespaceKeyFunc, clientcache.Indexers{clientcache.NamespaceIndex: clientcache.MetaNamespaceIndexFunc})
	for _, pod := range pods {
		if err := indexer.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPodLister(indexer)
}

func TestAMemberIsAVictimOnlyWhenThePreemptorOutranksItsWholeJob(t *testing.T) {
	h := newHarness(t, nil)
	preemptor := withPriority(filler("urgent", "", 1), 1000)
	low := withPriority(member("llm", 0, 2, "a1"), 100)
	for _, tt := range []struct {
		name   string
		victim *v1.Pod
		others []*v1.Pod
		want   bool
	}{
		{"a member of a lower-priority job of 2", low, []*v1.Pod{withPriority(member("llm", 1, 2, "a2"), 100)}, true},
		{"a member whose job has another member at the preemptor's priority", low, []*v1.Pod{withPriority(member("llm", 1, 2, "a2"), 1000)}, false},
		{"a member whose job has a pending member above the preemptor", low, []*v1.Pod{withPriority(member("llm", 1, 2, ""), 2000)}, false},
		{"a member whose job's other member is not in the informer", low, nil, true},
		{"a pod in no job, beside a job of higher priority", withPriority(filler("other", "a1", 1), 100), []*v1.Pod{withPriority(member("llm", 1, 2, "a2"), 2000)}, true},
		{"an Indexed Job's member whose Job is not known: a job of its own", withPriority(indexedMember("ij", "uid-ij", 0), 100),
			[]*v1.Pod{withPriority(indexedMember("ij", "uid-ij", 1), 2000)}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.plugin.pods = podsLister(t, append([]*v1.Pod{tt.victim}, tt.others...)...)
			victim, err := framework.NewPodInfo(tt.victim)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.plugin.mayEvict(nil, victim, preemptor); got != tt.want {
				t.Fatalf("mayEvict = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAVictimBringsItsJobsOtherMembersOrderedAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	chosen := withPriority(member("llm", 0, 3, "a1"), 100)
	onA2 := withPriority(member("llm", 1, 3, "a2"), 300)
	onA3 := withPriority(member("llm", 2, 3, "a3"), 100)
	plain := withPriority(filler("notebook", "a1", 1), 200)
	h.plugin.pods = podsLister(t, chosen, onA2, onA3, plain)
	budget := &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ml"},
		Spec:       policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: chosen.Labels}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 2},
	}
	preemptor := withPriority(filler("urgent", "", 1), 1000)
	victims, violations, status := h.plugin.wholeJob(klog.Background(), preemptor, []*v1.Pod{plain, chosen}, 0,
		[]*policy.PodDisruptionBudget{budget}, util.MoreImportantPod)
	if !status.IsSuccess() {
		t.Fatalf("status = %v", status)
	}
	var names []string
	for _, pod := range victims {
		names = append(names, pod.Name)
	}
	// Most important first, as kube-scheduler reads them: priority 300, 200, then the two at 100
	// (ordered between them by start time, which these pods do not have).
	if !slices.Equal(names[:2], []string{"llm-1", "notebook"}) || !slices.Equal(slices.Sorted(slices.Values(names[2:])), []string{"llm-0", "llm-2"}) {
		t.Fatalf("victims = %v, want llm-1, notebook, then llm-0 and llm-2", names)
	}
	// The budget allows 2 disruptions: llm-0 and llm-1 take them, llm-2 violates it.
	if violations != 1 {
		t.Fatalf("violations = %d, want 1", violations)
	}

	h.plugin.pods = podsLister(t, chosen, withPriority(member("llm", 1, 3, "a2"), 1000))
	if _, _, status := h.plugin.wholeJob(klog.Background(), preemptor, []*v1.Pod{chosen}, 0, nil, util.MoreImportantPod); status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != OutrankedMessage {
		t.Fatalf("a job that gained a member at the preemptor's priority: %v, want %q", status, OutrankedMessage)
	}
}

func TestABudgetCountsOnlyThePodsItSelectsAndHasNotDisruptedYet(t *testing.T) {
	pod := member("llm", 0, 2, "a1")
	budget := func(namespace string, selector *metav1.LabelSelector, disrupted ...string) *policy.PodDisruptionBudget {
		pdb := &policy.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: namespace},
			Spec: policy.PodDisruptionBudgetSpec{Selector: selector}}
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
		for _, name := range disrupted {
			pdb.Status.DisruptedPods[name] = metav1.Now()
		}
		return pdb
	}
	selects := &metav1.LabelSelector{MatchLabels: pod.Labels}
	for _, tt := range []struct {
		name string
		pdb  *policy.PodDisruptionBudget
		want bool
	}{
		{"its selector matches", budget("ml", selects), true},
		{"another namespace", budget("other", selects), false},
		{"an empty selector selects nothing", budget("ml", &metav1.LabelSelector{}), false},
		{"an invalid selector selects nothing", budget("ml", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bad"}}}), false},
		{"already disrupted", budget("ml", selects, pod.Name), false},
	} {
		if got := budgetCounts(tt.pdb, pod); got != tt.want {
			t.Errorf("%s: budgetCounts = %v, want %v", tt.name, got, tt.want)
		}
	}
	if budgetCounts(budget("other", &metav1.LabelSelector{}), filler("x", "a1", 1)) {
		t.Error("a pod without labels is selected by no budget")
	}
}

// preemptionScene is a real framework (NodeResourcesFit and JobZone at PreFilter, Filter and
// PostFilter) over a fake API server holding pods, with kube-scheduler's informers started.
type preemptionScene struct {
	fw     framework.Framework
	plugin *JobZone
	client *fake.Clientset
}

// extra are other objects the API server holds (PodDisruptionBudgets).
func newPreemptionScene(t *testing.T, nodes []*v1.Node, pods []*v1.Pod, extra ...runtime.Object) *preemptionScene {
	t.Helper()
	// Preemption's API calls made in the cycle, so the test reads their effect when PostFilter returns.
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.SchedulerAsyncPreemption, false)
	metrics.Register()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	objects := make([]runtime.Object, 0, len(pods))
	var placed []*v1.Pod
	for _, pod := range pods {
		objects = append(objects, pod)
		if pod.Spec.NodeName != "" {
			placed = append(placed, pod)
		}
	}
	client := fake.NewClientset(append(objects, extra...)...)
	factory := informers.NewSharedInformerFactory(client, 0)
	fit := frameworkruntime.FactoryAdapter(plfeature.Features{}, noderesources.NewFit)
	var plugin *JobZone
	jobZone := func(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
		pl, err := New(ctx, obj, handle)
		plugin, _ = pl.(*JobZone)
		return pl, err
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(noderesources.Name, fit, "Filter", "PreFilter"),
		tf.RegisterPluginAsExtensions(Name, jobZone, "PreFilter", "Filter", "PostFilter"),
	}, "default-scheduler",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithPodNominator(internalqueue.NewSchedulingQueue(nil, factory)),
		frameworkruntime.WithSnapshotSharedLister(cache.NewSnapshot(placed, nodes)),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodActivator(&recordingActivator{changed: make(chan struct{}, 1)}),
	)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return &preemptionScene{fw: fw, plugin: plugin, client: client}
}

// preempt runs a scheduling cycle's PreFilter and, with every node unschedulable for the pod,
// JobZone's PostFilter (the profile's preemption), and returns the node the pod was nominated to.
func (s *preemptionScene) preempt(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, status, _ := s.fw.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() && !status.IsSkip() {
		t.Fatalf("PreFilter: %v", status)
	}
	nodes, err := s.fw.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	statuses := framework.NewDefaultNodeToStatus()
	for _, node := range nodes {
		statuses.Set(node.Node().Name, fwk.NewStatus(fwk.Unschedulable, "Insufficient nvidia.com/gpu"))
	}
	result, status := s.plugin.PostFilter(ctx, state, pod, statuses)
	if !status.IsSuccess() {
		t.Fatalf("PostFilter: %v (%s)", status, status.Code())
	}
	return result.NominatedNodeName
}

// deleted names the pods the preemption deleted, in the order of pods.
func (s *preemptionScene) deleted(t *testing.T, pods ...*v1.Pod) []string {
	t.Helper()
	var names []string
	for _, pod := range pods {
		_, err := s.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			names = append(names, pod.Name)
		case err != nil:
			t.Fatal(err)
		}
	}
	return names
}

func TestAHigherPriorityPodPreemptsALowerPriorityJobWhole(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 1), gpuNode("a2", "us-east-1a", 1)}
	first := withPriority(member("pair", 0, 2, "a1"), 100)
	second := withPriority(member("pair", 1, 2, "a2"), 100)
	urgent := withPriority(filler("urgent", "", 1), 1000)
	scene := newPreemptionScene(t, nodes, []*v1.Pod{first, second, urgent})
	nominated := scene.preempt(t, urgent)
	if nominated != "a1" && nominated != "a2" {
		t.Fatalf("nominated to %q, want a1 or a2", nominated)
	}
	if got := scene.deleted(t, first, second); !slices.Equal(got, []string{"pair-0", "pair-1"}) {
		t.Fatalf("deleted %v, want both members of the job", got)
	}
}

func TestPreemptionPrefersOnePodInNoJobToAWholeJob(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 2), gpuNode("b1", "us-east-1b", 1)}
	first := withPriority(member("pair", 0, 2, "a1"), 100)
	second := withPriority(member("pair", 1, 2, "a1"), 100)
	other := withPriority(filler("other", "b1", 1), 100)
	urgent := withPriority(filler("urgent", "", 1), 1000)
	scene := newPreemptionScene(t, nodes, []*v1.Pod{first, second, other, urgent})
	if nominated := scene.preempt(t, urgent); nominated != "b1" {
		t.Fatalf("nominated to %q, want b1 (one victim, not a job of 2)", nominated)
	}
	if got := scene.deleted(t, first, second, other); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("deleted %v, want only the pod in no job", got)
	}
}

func TestAJobAtThePreemptorsPriorityIsNoVictim(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 1), gpuNode("a2", "us-east-1a", 1)}
	low := withPriority(member("pair", 0, 2, "a1"), 100)
	high := withPriority(member("pair", 1, 2, "a2"), 1000)
	urgent := withPriority(filler("urgent", "", 1), 1000)
	scene := newPreemptionScene(t, nodes, []*v1.Pod{low, high, urgent})
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, status, _ := scene.fw.RunPreFilterPlugins(ctx, state, urgent); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	statuses := framework.NewDefaultNodeToStatus()
	for _, node := range nodes {
		statuses.Set(node.Name, fwk.NewStatus(fwk.Unschedulable, "Insufficient nvidia.com/gpu"))
	}
	if _, status := scene.plugin.PostFilter(ctx, state, urgent, statuses); status.IsSuccess() {
		t.Fatal("PostFilter succeeded: a member of a job the preemptor does not outrank was taken")
	}
	if got := scene.deleted(t, low, high); len(got) != 0 {
		t.Fatalf("deleted %v, want none", got)
	}
}
