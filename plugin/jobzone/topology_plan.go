package jobzone

import (
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/topology"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// memberIndex is the member's rank in its job where its controller writes one: an
// Indexed Job's completion index (annotation, else label), a LeaderWorkerSet worker
// index; false for a JobSet (its completion index repeats across its child Jobs), for
// pods without one, and for an index outside the job's size.
func memberIndex(pod *v1.Pod, job *zonepolicy.Job) (int, bool) {
	if job.Source == zonepolicy.SourceJobSet {
		return 0, false
	}
	raw, ok := pod.Annotations[zonepolicy.JobCompletionIndex]
	if !ok {
		raw, ok = pod.Labels[zonepolicy.JobCompletionIndex]
	}
	if !ok && job.Source == zonepolicy.SourceLeaderWorkerSet {
		raw, ok = pod.Labels[lwsWorkerIndexLabel]
	}
	index, err := strconv.ParseInt(raw, 10, 64)
	if !ok || err != nil || index < 0 || index >= job.Size {
		return 0, false
	}
	return int(index), true
}

// lwsWorkerIndexLabel is LeaderWorkerSet's pod label: the pod's index in its group (0 the leader).
const lwsWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"

// topologyNodeNames narrows a member to the nodes the job's network topology plan gives
// it inside zone (PreFilter's hook). The plan is made for the whole job (its members
// with GPUs, package topology) on the zone as if the job's own placed members were not
// there (their room given back), so every member computes the same plan while nothing
// else changes. A member with a rank (memberIndex) gets its planned node while that node
// has room for it; otherwise, or without a rank, the planned nodes still short of their
// planned members. The zone's nodes are returned unchanged for a member without GPUs, in
// a zone where no node carries the network labels, and for a preferred choice the zone
// cannot hold. A required choice no network node holds is the plan's message, ok false.
func (pl *JobZone) topologyNodeNames(logger klog.Logger, nodes []fwk.NodeInfo, pod *v1.Pod, job *zonepolicy.Job, zone string) (names sets.Set[string], reason string, ok bool) {
	inZone := nodesIn(nodes, zone, pl.config.zone)
	shape := newPodShape(pod, pl.config)
	if shape.gpus <= 0 {
		return inZone, "", true
	}
	shapes, _, err := pl.jobShapes(pod, job)
	if err != nil {
		return inZone, "", true
	}
	var members []int64
	for _, s := range shapes {
		if s.gpus > 0 {
			members = append(members, s.gpus)
		}
	}
	gpus := slices.Max(members)
	own := map[string]int64{}
	labelled := false
	var zoneNodes []topology.Node
	for _, info := range nodes {
		node := info.Node()
		if node == nil || !inZone.Has(node.Name) {
			continue
		}
		for _, podInfo := range info.GetPods() {
			if p := podInfo.GetPod(); p.UID != pod.UID && isPlacedMember(p, pod.Namespace, job, pl.config.zone) {
				own[node.Name]++
			}
		}
		path := topology.NodePath(node.Labels, pl.config.zone.Topology)
		labelled = labelled || len(path) > 0
		free := freeOn(info)
		copies := shape.copiesIn(&free)
		if !shape.admits(logger, info, pl.config) {
			copies = 0
		}
		if copies += own[node.Name]; copies > 0 {
			zoneNodes = append(zoneNodes, topology.Node{Name: node.Name, Path: path, FreeGPUs: copies * gpus})
		}
	}
	if !labelled {
		return inZone, "", true
	}
	plan := topology.PlanTopology(zoneNodes, members, job.Topology, pl.config.zone.Topology.MaxLayers)
	if plan.Message != "" {
		if job.Topology.RequiredLayer > 0 {
			return nil, plan.Message, false
		}
		return inZone, "", true
	}
	planned := map[string]int64{}
	for _, name := range plan.Nodes {
		planned[name]++
	}
	names = sets.New[string]()
	if index, ok := memberIndex(pod, job); ok && index < len(plan.Nodes) && own[plan.Nodes[index]] < planned[plan.Nodes[index]] {
		names.Insert(plan.Nodes[index])
	} else {
		for name, count := range planned {
			if own[name] < count {
				names.Insert(name)
			}
		}
	}
	if names.Len() == 0 {
		names = sets.KeySet(planned)
	}
	logger.V(4).Info("planned nodes for a job member", "pod", klog.KObj(pod), "job", job.Name,
		"topology", job.Topology.String(), "layers", plan.Layers, "nodes", sets.List(names))
	return names, "", true
}
