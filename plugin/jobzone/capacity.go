package jobzone

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// podShape is what one copy of a job's pod needs of a node, read once per plan.
type podShape struct {
	pod              *v1.Pod
	gpus             int64
	milliCPU         int64
	memory           int64
	ephemeralStorage int64
	// scalars are the extended resources (GPUs, EFA interfaces, ...) and hugepages the pod
	// requests, as NodeResourcesFit counts them.
	scalars     map[v1.ResourceName]int64
	requirement gpupolicy.Requirement
	// requirementErr is the GPU-memory policy's error for an invalid pod: it fits nowhere.
	requirementErr error
	capacity       gpupolicy.CapacityChoice
	// capacityErr is the capacity-type rule's error for an invalid choice: it fits nowhere.
	capacityErr error
	affinity    nodeaffinity.RequiredNodeAffinity
	// volumeAffinity is the required node affinity of each PersistentVolume the pod mounts.
	volumeAffinity []*nodeaffinity.LazyErrorNodeSelector
}

func newPodShape(pod *v1.Pod, c config) podShape {
	shape := requestShape(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), c.gpu.GPUResource)
	shape.pod = pod
	shape.requirement, shape.requirementErr = gpupolicy.FromPod(pod, c.gpu)
	shape.capacity, shape.capacityErr = gpupolicy.CapacityChoiceFromPod(pod, c.capacity)
	shape.affinity = nodeaffinity.GetRequiredNodeAffinity(pod)
	return shape
}

// requestShape is the resource part of a shape: what the pod's requests take of a node.
func requestShape(requests v1.ResourceList, gpuResource v1.ResourceName) podShape {
	gpus := requests[gpuResource]
	scalars := map[v1.ResourceName]int64{}
	for name, quantity := range requests {
		if schedutil.IsScalarResourceName(name) && !quantity.IsZero() {
			scalars[name] = quantity.Value()
		}
	}
	return podShape{
		gpus:             gpus.Value(),
		milliCPU:         requests.Cpu().MilliValue(),
		memory:           requests.Memory().Value(),
		ephemeralStorage: requests.StorageEphemeral().Value(),
		scalars:          scalars,
	}
}

// copiesOn is how many copies of the pod fit on the node now: zero for a node the pod
// may not use (admits), otherwise what the node's free resources hold (freeOn, copiesIn).
func (s podShape) copiesOn(logger klog.Logger, info fwk.NodeInfo, c config) int64 {
	if !s.admits(logger, info, c) {
		return 0
	}
	free := freeOn(info)
	return s.copiesIn(&free)
}

// admits reports whether the pod may use the node at all: not for a node that is being
// taken away (deleted, cordoned or carrying a disruption taint, whatever the pod tolerates
// and whether or not it has a capacity choice: a job's members must stay together), has a
// NoSchedule or NoExecute taint the pod does not tolerate, is outside the pod's required
// node selector and affinity or a mounted volume's node affinity (an EBS volume's zone), or
// fails the GPU-memory or the capacity-type rule (CapacityType would refuse it).
func (s podShape) admits(logger klog.Logger, info fwk.NodeInfo, c config) bool {
	node := info.Node()
	if node == nil || gpupolicy.DisruptionSignal(node) != "" || s.requirementErr != nil || s.capacityErr != nil {
		return false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, s.pod.Spec.Tolerations, blocksScheduling, false); untolerated {
		return false
	}
	if matches, err := s.affinity.Match(node); err != nil || !matches {
		return false
	}
	for _, selector := range s.volumeAffinity {
		if matches, err := selector.Match(node); err != nil || !matches {
			return false
		}
	}
	if fits, _ := gpupolicy.FitsMemory(s.requirement, node, c.gpu); !fits {
		return false
	}
	fits, _ := gpupolicy.FitsCapacityType(s.capacity, node, c.capacity)
	return fits
}

// nodeFree is what a node has left now: pod slots, CPU, memory, ephemeral storage and each
// extended resource and hugepage size (allocatable less what its pods request, pods
// assumed by the scheduler and not yet bound included, so members already reserved count
// as taken).
type nodeFree struct {
	pods, milliCPU, memory, ephemeralStorage int64
	scalars                                  map[v1.ResourceName]int64
}

func freeOn(info fwk.NodeInfo) nodeFree {
	allocatable, requested := info.GetAllocatable(), info.GetRequested()
	free := nodeFree{
		pods:             int64(allocatable.GetAllowedPodNumber() - len(info.GetPods())),
		milliCPU:         allocatable.GetMilliCPU() - requested.GetMilliCPU(),
		memory:           allocatable.GetMemory() - requested.GetMemory(),
		ephemeralStorage: allocatable.GetEphemeralStorage() - requested.GetEphemeralStorage(),
		scalars:          map[v1.ResourceName]int64{},
	}
	taken := requested.GetScalarResources()
	for name, amount := range allocatable.GetScalarResources() {
		free.scalars[name] = amount - taken[name]
	}
	return free
}

// copiesIn is how many copies of the pod the free resources hold: the least of free pod
// slots and of every resource the pod requests, each free amount divided by what one copy
// requests, as NodeResourcesFit counts them (a node without a requested extended resource
// holds none).
func (s podShape) copiesIn(free *nodeFree) int64 {
	copies := free.pods
	for _, r := range []struct{ free, need int64 }{
		{free.milliCPU, s.milliCPU}, {free.memory, s.memory}, {free.ephemeralStorage, s.ephemeralStorage},
	} {
		if r.need > 0 {
			copies = min(copies, r.free/r.need)
		}
	}
	for name, need := range s.scalars {
		copies = min(copies, free.scalars[name]/need)
	}
	return max(copies, 0)
}

// take subtracts one copy of the pod from the free resources.
func (s podShape) take(free *nodeFree) {
	free.pods--
	free.milliCPU -= s.milliCPU
	free.memory -= s.memory
	free.ephemeralStorage -= s.ephemeralStorage
	for name, need := range s.scalars {
		free.scalars[name] -= need
	}
}

func blocksScheduling(taint *v1.Taint) bool {
	return taint.Effect == v1.TaintEffectNoSchedule || taint.Effect == v1.TaintEffectNoExecute
}

// zoneOf is the node's zone label, "" for a node without one (never in a job's plan).
func zoneOf(node *v1.Node, s zonepolicy.Settings) string {
	if node == nil {
		return ""
	}
	return node.Labels[s.ZoneLabel]
}

// isMember reports whether other is a pod of the job (zonepolicy.IsMember: same
// namespace, opted in to same-zone, same job).
func isMember(other *v1.Pod, namespace string, job *zonepolicy.Job, s zonepolicy.Settings) bool {
	return zonepolicy.IsMember(other, namespace, job, s)
}

// isPlacedMember reports whether other, a pod bound or assumed on a node, counts as a
// placed member of the job: a member that is not terminating. A pod being deleted (a job
// deleted and created again under its name, or a member replaced) neither fixes the
// job's zone nor counts towards its size, though it holds its resources until it is gone.
// (Succeeded and Failed pods never reach the scheduler's cache.)
func isPlacedMember(other *v1.Pod, namespace string, job *zonepolicy.Job, s zonepolicy.Settings) bool {
	return other.DeletionTimestamp == nil && isMember(other, namespace, job, s)
}

// memberZone is the zone holding most of the job's placed members (bound or assumed, not
// terminating; ties to the first by name), and "" when there are none. self is left out, and so are
// the zones in skip (where the job timed out: members still assumed there are being
// rejected and unreserved).
func memberZone(nodes []fwk.NodeInfo, self *v1.Pod, job *zonepolicy.Job, s zonepolicy.Settings, skip map[string]bool) string {
	counts := map[string]int{}
	for _, info := range nodes {
		zone := zoneOf(info.Node(), s)
		if zone == "" || skip[zone] {
			continue
		}
		for _, podInfo := range info.GetPods() {
			if p := podInfo.GetPod(); p.UID != self.UID && isPlacedMember(p, self.Namespace, job, s) {
				counts[zone]++
			}
		}
	}
	zones := make([]string, 0, len(counts))
	for zone := range counts {
		zones = append(zones, zone)
	}
	slices.Sort(zones)
	best := ""
	for _, zone := range zones {
		if best == "" || counts[zone] > counts[best] {
			best = zone
		}
	}
	return best
}

// nodesIn is the names of the nodes in zone.
func nodesIn(nodes []fwk.NodeInfo, zone string, s zonepolicy.Settings) sets.Set[string] {
	names := sets.New[string]()
	for _, info := range nodes {
		if zoneOf(info.Node(), s) == zone {
			names.Insert(info.Node().Name)
		}
	}
	return names
}

// copiesByZone is, zone by zone, how many copies of the pod fit on its nodes now.
func copiesByZone(logger klog.Logger, nodes []fwk.NodeInfo, shape podShape, c config) map[string]int64 {
	copies := map[string]int64{}
	for _, info := range nodes {
		zone := zoneOf(info.Node(), c.zone)
		if zone == "" {
			continue
		}
		copies[zone] += shape.copiesOn(logger, info, c)
	}
	return copies
}
