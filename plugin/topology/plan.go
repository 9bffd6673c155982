package topology

import (
	"fmt"
	"slices"
)

const (
	// ZoneTooSmallFormat formats, with the members the zone holds and the job's members
	// with GPUs, the message of a Preferred plan on a zone without room for all.
	ZoneTooSmallFormat = "the zone's nodes hold %d of the job's %d members"
	// NoNetworkNodeHoldsFormat formats, with the layer, the job's members with GPUs and
	// the most one network node of that layer holds, the message of a required plan
	// that no single network node of the layer can hold.
	NoNetworkNodeHoldsFormat = "no network node at layer %d holds all %d members of the job: the most one holds is %d"
)

// unknownPrefix starts the domain name of a node without labels (a label value cannot
// hold "/"); padding is the domain name below a node's last layer (a value read is
// never empty).
const (
	unknownPrefix = "node/"
	padding       = ""
)

// Node is a node of the job's zone that the job's members may use.
type Node struct {
	Name string
	// Path is its network nodes from layer 1 down (NodePath); empty without labels.
	Path []string
	// FreeGPUs are the GPUs not taken by other pods or held for other jobs.
	FreeGPUs int64
}

// Plan is the nodes chosen for a job's members, or (Message set) why there is none.
type Plan struct {
	// Nodes holds, per member in index order, its node; empty for a member without GPUs.
	Nodes []string
	// Layers holds the domains used per layer, layer 1 first (the last is the bottom).
	Layers []int64
	// Cost is compared in order: domains used at the bottom layer up to layer 1, nodes
	// used, then the free room (in members) of the layer-1 domains used down to the
	// bottom layer's, then of the nodes used.
	Cost    []int64
	Message string
}

// vertex is the zone (depth 0), a network node (1..maxLayers) or a node (maxLayers+1).
type vertex struct {
	depth    int
	room     int64
	children map[string]*vertex
	names    []string // children's names, sorted
	best     [][]int64
	splits   [][]int
}

// PlanTopology chooses the nodes of a job whose members ask members[i] GPUs each (index
// order). A node holds FreeGPUs/g members, g the largest count; a member asking fewer
// (but some) GPUs is planned like the largest, and a member without GPUs is not placed
// (its entry is empty). The plan minimises, in order: the domains used at the bottom
// layer, then at each layer up to layer 1, the nodes used, then the room of the domains
// used from layer 1 down and of the nodes used (the tightest fit); among equals the
// first in name order. It is exact: a dynamic programme over the network tree. Members
// are numbered along the tree in name order, so consecutive indices share a bottom
// domain. A required choice takes every member under one network node of its layer and
// uses only nodes labelled down to that layer.
func PlanTopology(nodes []Node, members []int64, choice Choice, maxLayers int) Plan {
	var gpus int64
	var ranks []int
	for index, count := range members {
		gpus = max(gpus, count)
		if count > 0 {
			ranks = append(ranks, index)
		}
	}
	if len(ranks) == 0 {
		return Plan{Nodes: make([]string, len(members)), Layers: make([]int64, maxLayers), Cost: zero(maxLayers)}
	}
	size := len(ranks)
	layer := choice.RequiredLayer
	var usable []Node
	for _, node := range nodes {
		if node.FreeGPUs/gpus > 0 && len(node.Path) >= layer {
			usable = append(usable, node)
		}
	}
	root := tree(usable, gpus, maxLayers)
	solve(root, size, maxLayers)
	var counts []nodeCount
	if layer == 0 {
		if root.room < int64(size) {
			return Plan{Message: fmt.Sprintf(ZoneTooSmallFormat, root.room, size)}
		}
		counts = countsOf(root, size, nil)
	} else {
		chosen := bestDomain(root, layer, size, maxLayers)
		if chosen == nil {
			var most int64
			for _, v := range atDepth(root, layer, nil) {
				most = max(most, v.room)
			}
			return Plan{Message: fmt.Sprintf(NoNetworkNodeHoldsFormat, layer, size, most)}
		}
		counts = countsOf(chosen, size, nil)
	}
	assignment := make([]string, len(members))
	next := 0
	perNode := map[string]int{}
	for _, c := range counts {
		perNode[c.name] = c.count
		for range c.count {
			assignment[ranks[next]] = c.name
			next++
		}
	}
	layers, cost := PlanCost(usable, perNode, gpus, maxLayers)
	return Plan{Nodes: assignment, Layers: layers, Cost: cost}
}

type nodeCount struct {
	name  string
	count int
}

func zero(maxLayers int) []int64 {
	return make([]int64, 2*maxLayers+2)
}

func padded(node Node, maxLayers int) []string {
	path := node.Path
	if len(path) > maxLayers {
		path = path[:maxLayers]
	}
	if len(path) == 0 {
		path = []string{unknownPrefix + node.Name}
	}
	out := slices.Clone(path)
	for len(out) < maxLayers {
		out = append(out, padding)
	}
	return out
}

func newVertex(depth int) *vertex {
	return &vertex{depth: depth, children: map[string]*vertex{}}
}

func tree(nodes []Node, gpus int64, maxLayers int) *vertex {
	root := newVertex(0)
	for _, node := range nodes {
		room := node.FreeGPUs / gpus
		v := root
		v.room += room
		for depth, name := range padded(node, maxLayers) {
			child, ok := v.children[name]
			if !ok {
				child = newVertex(depth + 1)
				v.children[name] = child
			}
			v = child
			v.room += room
		}
		leaf := newVertex(maxLayers + 1)
		leaf.room = room
		v.children[node.Name] = leaf
	}
	return root
}

// own is what using v adds to a plan's cost (nothing for the zone).
func own(v *vertex, maxLayers int) []int64 {
	cost := zero(maxLayers)
	switch {
	case v.depth > maxLayers:
		cost[maxLayers] = 1
		cost[2*maxLayers+1] = v.room
	case v.depth > 0:
		cost[maxLayers-v.depth] = 1
		cost[maxLayers+v.depth] = v.room
	}
	return cost
}

func add(left, right []int64) []int64 {
	out := make([]int64, len(left))
	for i := range left {
		out[i] = left[i] + right[i]
	}
	return out
}

// solve fills best and splits of v and its subtree for up to size members.
func solve(v *vertex, size int, maxLayers int) {
	limit := min(int64(size), v.room)
	mine := own(v, maxLayers)
	if len(v.children) == 0 {
		v.best = [][]int64{zero(maxLayers)}
		for range limit {
			v.best = append(v.best, mine)
		}
		return
	}
	v.names = make([]string, 0, len(v.children))
	for name := range v.children {
		v.names = append(v.names, name)
	}
	slices.Sort(v.names)
	best := [][]int64{zero(maxLayers)}
	for _, name := range v.names {
		child := v.children[name]
		solve(child, size, maxLayers)
		top := min(int(limit), len(best)-1+len(child.best)-1)
		combined := make([][]int64, 0, top+1)
		split := make([]int, 0, top+1)
		for total := 0; total <= top; total++ {
			var least []int64
			taken := 0
			for count := max(0, total-len(best)+1); count <= min(total, len(child.best)-1); count++ {
				cost := add(best[total-count], child.best[count])
				if least == nil || slices.Compare(cost, least) < 0 {
					least, taken = cost, count
				}
			}
			combined = append(combined, least)
			split = append(split, taken)
		}
		best = combined
		v.splits = append(v.splits, split)
	}
	if v.depth > 0 {
		for i := 1; i < len(best); i++ {
			best[i] = add(best[i], mine)
		}
	}
	v.best = best
}

// countsOf appends how many members each node under v takes in v's best plan for
// total, in tree order.
func countsOf(v *vertex, total int, out []nodeCount) []nodeCount {
	takes := make([]int, len(v.names))
	remaining := total
	for i := len(v.names) - 1; i >= 0; i-- {
		takes[i] = v.splits[i][remaining]
		remaining -= takes[i]
	}
	for i, name := range v.names {
		child := v.children[name]
		switch {
		case takes[i] == 0:
		case len(child.children) > 0:
			out = countsOf(child, takes[i], out)
		default:
			out = append(out, nodeCount{name: name, count: takes[i]})
		}
	}
	return out
}

func atDepth(v *vertex, depth int, out []*vertex) []*vertex {
	if v.depth == depth {
		return append(out, v)
	}
	for _, name := range v.names {
		out = atDepth(v.children[name], depth, out)
	}
	return out
}

// bestDomain is the layer-layer network node whose best plan for size members, with
// its ancestors' share of the cost, is least (the first in name order among equals).
func bestDomain(root *vertex, layer, size, maxLayers int) *vertex {
	var best *vertex
	var bestCost []int64
	var visit func(v *vertex, above []int64)
	visit = func(v *vertex, above []int64) {
		if v.depth == layer {
			if v.room >= int64(size) {
				cost := add(above, v.best[size])
				if bestCost == nil || slices.Compare(cost, bestCost) < 0 {
					best, bestCost = v, cost
				}
			}
			return
		}
		here := add(above, own(v, maxLayers))
		for _, name := range v.names {
			visit(v.children[name], here)
		}
	}
	visit(root, zero(maxLayers))
	return best
}

// PlanCost is the domains used per layer (layer 1 first) and the cost of counts
// members per node name on nodes (a domain's room counts every node given).
func PlanCost(nodes []Node, counts map[string]int, gpus int64, maxLayers int) ([]int64, []int64) {
	room := map[string]int64{}
	used := map[string]int{} // domain key -> depth
	var nodeRoom, nodesUsed int64
	for _, node := range nodes {
		path := padded(node, maxLayers)
		fits := node.FreeGPUs / gpus
		for depth := 1; depth <= maxLayers; depth++ {
			key := fmt.Sprintf("%q", path[:depth])
			room[key] += fits
			if counts[node.Name] > 0 {
				used[key] = depth
			}
		}
		if counts[node.Name] > 0 {
			nodeRoom += fits
			nodesUsed++
		}
	}
	layers := make([]int64, maxLayers)
	rooms := make([]int64, maxLayers)
	for key, depth := range used {
		layers[depth-1]++
		rooms[depth-1] += room[key]
	}
	cost := make([]int64, 0, 2*maxLayers+2)
	for depth := maxLayers; depth >= 1; depth-- {
		cost = append(cost, layers[depth-1])
	}
	cost = append(cost, nodesUsed)
	cost = append(cost, rooms...)
	cost = append(cost, nodeRoom)
	return layers, cost
}
