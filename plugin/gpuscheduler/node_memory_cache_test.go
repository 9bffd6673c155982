package gpuscheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// informerDeadline bounds each wait for the fake informer to deliver an event.
const informerDeadline = 10 * time.Second

// size counts the cache's entries, checking that both of its maps agree.
func (c *nodeMemoryCache) size(t *testing.T) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	objects := 0
	c.byObject.Range(func(key, _ any) bool {
		objects++
		if node := key.(*v1.Node); c.byName[node.Name] != node {
			t.Errorf("entry for an object of %s that byName does not hold", node.Name)
		}
		return true
	})
	if objects != len(c.byName) {
		t.Errorf("%d objects but %d names", objects, len(c.byName))
	}
	return objects
}

// waitFor polls condition until it holds, failing the test after informerDeadline.
func waitFor(t *testing.T, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, informerDeadline, true,
		func(context.Context) (bool, error) { return condition(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestNodeMemoryCacheFollowsTheNodeInformer builds the plugin with a framework
// handle whose informer factory serves a fake API, as the scheduler does, and checks
// the cache holds the informer's current object of each node, follows a relabel,
// answers for the object it is given when the snapshot is older, and forgets a
// deleted node.
func TestNodeMemoryCacheFollowsTheNodeInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(gpuNode("h100", "81920"), gpuNode("a10g", "22888"))
	factory := informers.NewSharedInformerFactory(client, 0)
	handle, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithInformerFactory(factory))
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := New(ctx, nil, handle)
	if err != nil {
		t.Fatal(err)
	}
	pl := plugin.(*GPUScheduler)
	if pl.nodes == nil {
		t.Fatal("New with an informer factory must keep a node label cache")
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	lister := factory.Core().V1().Nodes().Lister()

	cachedAs := func(name string, want int64) func() bool {
		return func() bool {
			node, err := lister.Get(name)
			if err != nil {
				return false
			}
			memory, hit := pl.nodes.lookup(node)
			return hit && memory.Reason == "" && memory.MiB == want
		}
	}
	waitFor(t, "both nodes cached", func() bool { return cachedAs("h100", 81920)() && cachedAs("a10g", 22888)() })
	before, err := lister.Get("h100")
	if err != nil {
		t.Fatal(err)
	}

	relabelled := before.DeepCopy()
	relabelled.Labels[gpupolicy.NodeMemoryLabel] = "16384"
	if _, err := client.CoreV1().Nodes().Update(ctx, relabelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the relabelled node cached", cachedAs("h100", 16384))
	if _, hit := pl.nodes.lookup(before); hit {
		t.Error("the object before the update is still cached")
	}
	if n := pl.nodes.size(t); n != 2 {
		t.Errorf("cache holds %d entries, want 2 (one per node)", n)
	}

	// The scheduler's snapshot may still hold the old object: it is judged by its own label.
	pod := gpuPod("1", "40960")
	after, err := lister.Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	assertStatus(t, "Filter on the old object", pl.Filter(ctx, nil, pod, nodeInfo(before)), fwk.Success, "")
	assertStatus(t, "Filter on the new object", pl.Filter(ctx, nil, pod, nodeInfo(after)),
		fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonBelowMinimum)

	if err := client.CoreV1().Nodes().Delete(ctx, "h100", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted node forgotten", func() bool { return pl.nodes.size(t) == 1 })
	if _, hit := pl.nodes.lookup(after); hit {
		t.Error("the deleted node is still cached")
	}
}

// TestNodeMemoryCacheEvents drives the handlers directly: an update replaces the
// name's entry whatever the event's old object, a delete seen only at a re-list
// (a tombstone) removes it, and objects that are not nodes are ignored.
func TestNodeMemoryCacheEvents(t *testing.T) {
	c := newNodeMemoryCache(gpupolicy.DefaultSettings())
	h := c.handlers()
	first, second := gpuNode("n", "40960"), gpuNode("n", "80Gi")
	h.OnAdd(first, true)
	if memory, hit := c.lookup(first); !hit || memory != (gpupolicy.NodeMemory{MiB: 40960}) {
		t.Fatalf("lookup after add = %+v, %v", memory, hit)
	}
	h.OnUpdate(gpuNode("n", "40960"), second) // an old object the cache never saw
	if _, hit := c.lookup(first); hit {
		t.Error("the replaced object is still cached")
	}
	if memory, hit := c.lookup(second); !hit || memory.Reason != fmt.Sprintf(gpupolicy.ReasonInvalidMemoryLabelFormat, gpupolicy.NodeMemoryLabel) {
		t.Errorf("lookup of an invalid label = %+v, %v; want the reason cached", memory, hit)
	}
	h.OnUpdate(second, second) // a resync
	if n := c.size(t); n != 1 {
		t.Errorf("%d entries after a resync, want 1", n)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "n", Obj: second})
	if n := c.size(t); n != 0 {
		t.Errorf("%d entries after a tombstone, want 0", n)
	}
	h.OnAdd(&v1.Pod{}, false)
	h.OnAdd((*v1.Node)(nil), false)
	h.OnDelete((*v1.Node)(nil))
	h.OnDelete("not a node")
	h.OnDelete(gpuNode("never-added", "1"))
	if n := c.size(t); n != 0 {
		t.Errorf("%d entries after events without a node, want 0", n)
	}
}

// TestNodeMemoryCacheConcurrentReaders runs Filter and Score on many goroutines while
// the handlers relabel the nodes, as the scheduler's parallelizer and the informer
// do (run with -race to check the synchronisation). Every answer must be the one of
// the object judged.
func TestNodeMemoryCacheConcurrentReaders(t *testing.T) {
	pl := &GPUScheduler{settings: gpupolicy.DefaultSettings()}
	pl.nodes = newNodeMemoryCache(pl.settings)
	h := pl.nodes.handlers()
	memories := []string{"22888", "81920"}
	const names, rounds, readers = 8, 200, 4
	versions := make([][]*v1.Node, names)
	for i := range versions {
		for round := 0; round < rounds; round++ {
			versions[i] = append(versions[i], gpuNode(string(rune('a'+i)), memories[round%2]))
		}
		h.OnAdd(versions[i][0], true)
	}
	pod := gpuPod("1", "40960")
	var group sync.WaitGroup
	for r := 0; r < readers; r++ {
		group.Add(1)
		go func() {
			defer group.Done()
			for round := 0; round < rounds; round++ {
				for i := range versions {
					node := versions[i][round]
					status := pl.Filter(context.Background(), nil, pod, nodeInfo(node))
					if fits := node.Labels[gpupolicy.NodeMemoryLabel] == "81920"; status.IsSuccess() != fits {
						t.Errorf("Filter on %s (label %s) = %v", node.Name, node.Labels[gpupolicy.NodeMemoryLabel], status)
						return
					}
				}
			}
		}()
	}
	for round := 1; round < rounds; round++ {
		for i := range versions {
			h.OnUpdate(versions[i][round-1], versions[i][round])
		}
	}
	group.Wait()
	if n := pl.nodes.size(t); n != names {
		t.Errorf("%d entries, want %d", n, names)
	}
}
