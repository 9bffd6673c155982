package gpuscheduler

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// nodeMemoryCache holds every node's per-GPU memory, read once per node add or update
// from the first GPU-memory label scheme the node carries (gpupolicy.ReadNodeMemory),
// so Filter and Score do not look the labels up in the node's label map (~100 labels
// on an EKS GPU node) and parse them again for every pod and verb.
//
// Keys are the *v1.Node objects themselves. The scheduler's NodeInfo holds the
// object its Node informer delivered, so a Filter or Score call finds the label
// read from the very object it is judging, without reading the node; a call on an
// object the cache does not hold (the scheduler's snapshot and the cache each see
// an update at their own moment) reads the label itself. Answers are therefore
// always those of the node being judged.
//
// Writers are only the handlers of the scheduler's shared Node informer, as the
// dynamicresources plugin keeps its own trackers: an add or an update stores the
// new object and drops the object previously stored under the same name (found
// through byName, so this does not depend on what the event's old object is); a
// delete drops the name's object. The cache thus holds at most one object per
// existing node, the one the informer holds too: nothing of a deleted or replaced
// node is kept. Filter and Score run on many goroutines at once and only read: a
// sync.Map lookup takes no lock.
type nodeMemoryCache struct {
	settings gpupolicy.Settings
	// byObject maps each node's current *v1.Node to its gpupolicy.NodeMemory.
	byObject sync.Map
	// mu guards byName.
	mu sync.Mutex
	// byName is the object each node name's entry was read from, so an update or a
	// delete removes exactly that entry, whatever object the event carries.
	byName map[string]*v1.Node
}

func newNodeMemoryCache(settings gpupolicy.Settings) *nodeMemoryCache {
	return &nodeMemoryCache{settings: settings, byName: map[string]*v1.Node{}}
}

// handlers are the Node informer's event handlers that keep the cache.
func (c *nodeMemoryCache) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.store,
		UpdateFunc: func(_, newObj interface{}) { c.store(newObj) },
		DeleteFunc: c.remove,
	}
}

func (c *nodeMemoryCache) store(obj interface{}) {
	node, ok := obj.(*v1.Node)
	if !ok || node == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if previous := c.byName[node.Name]; previous != nil && previous != node {
		c.byObject.Delete(previous)
	}
	c.byName[node.Name] = node
	c.byObject.Store(node, gpupolicy.ReadNodeMemory(node, c.settings))
}

// remove forgets a deleted node; a delete noticed only at a re-list arrives as a
// DeletedFinalStateUnknown, whose key is the name of a cluster-scoped object.
func (c *nodeMemoryCache) remove(obj interface{}) {
	var name string
	switch deleted := obj.(type) {
	case *v1.Node:
		if deleted == nil {
			return
		}
		name = deleted.Name
	case cache.DeletedFinalStateUnknown:
		name = deleted.Key
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if previous := c.byName[name]; previous != nil {
		c.byObject.Delete(previous)
		delete(c.byName, name)
	}
}

// lookup returns the label read from exactly this node object, if the cache has it.
func (c *nodeMemoryCache) lookup(node *v1.Node) (gpupolicy.NodeMemory, bool) {
	if value, ok := c.byObject.Load(node); ok {
		return value.(gpupolicy.NodeMemory), true
	}
	return gpupolicy.NodeMemory{}, false
}
