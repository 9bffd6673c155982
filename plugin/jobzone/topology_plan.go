package jobzone

import (
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/topology"
)

// topologyNodes is the zone's nodes as the network topology planner takes them: each
// node's path in the network (its topology.k8s.aws/network-node-layer-N labels) and, as
// its free GPUs, the GPUs of the copies of the member it holds now (copiesOn: every
// requested resource, GPU memory, capacity type, taints, node affinity), so the
// planner's FreeGPUs/gpus is the member count the node holds. Nodes the member may not
// use, or without room for one copy, are left out. Empty for a member without GPUs.
func topologyNodes(logger klog.Logger, nodes []fwk.NodeInfo, zone string, shape podShape, c config) []topology.Node {
	if shape.gpus <= 0 {
		return nil
	}
	var out []topology.Node
	for _, info := range nodes {
		node := info.Node()
		if node == nil || zoneOf(node, c.zone) != zone {
			continue
		}
		copies := shape.copiesOn(logger, info, c)
		if copies == 0 {
			continue
		}
		out = append(out, topology.Node{
			Name:     node.Name,
			Path:     topology.NodePath(node.Labels, c.zone.Topology),
			FreeGPUs: copies * shape.gpus,
		})
	}
	return out
}

// planTopology chooses, inside zone, the nodes of a job of size members shaped like
// shape, by the job's network topology choice (package topology): the fewest
// bottom-layer network nodes, then the fewest at each layer above, the tightest fit,
// consecutive members under one bottom-layer node; or, for a required layer no single
// network node of which holds the job, the plan's message.
func planTopology(logger klog.Logger, nodes []fwk.NodeInfo, zone string, shape podShape, size int64, choice topology.Choice, c config) topology.Plan {
	members := make([]int64, size)
	for i := range members {
		members[i] = shape.gpus
	}
	return topology.PlanTopology(topologyNodes(logger, nodes, zone, shape, c), members, choice, c.zone.Topology.MaxLayers)
}
