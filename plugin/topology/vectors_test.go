package topology_test

import (
	"slices"
	"testing"

	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
	"example.com/gpu-scheduler-eks/plugin/topology"
)

// TestTopologyVectors holds ParseChoice and PlanTopology to tests/vectors/topology_cases.json,
// the file policy/network_topology.py and policy/topology_plan.py are tested against:
// the hand-written plans exactly, the generated zones at the exhaustive search's optimum.
func TestTopologyVectors(t *testing.T) {
	file := policyvectors.MustLoadTopology(t)
	if len(file.Choices) == 0 || len(file.Plans) == 0 || len(file.Generated) == 0 {
		t.Fatalf("%s has no cases", policyvectors.TopologyFile)
	}
	defaults, err := file.Settings.Settings()
	if err != nil || defaults != topology.DefaultSettings() {
		t.Fatalf("the file's settings %+v (%v) are not the defaults", defaults, err)
	}
	for _, c := range file.Choices {
		t.Run("choice/"+c.Name, func(t *testing.T) { checkChoiceCase(t, c) })
	}
	for _, c := range file.Plans {
		t.Run("plan/"+c.Name, func(t *testing.T) { checkPlanCase(t, c) })
	}
	for _, c := range file.Generated {
		t.Run("generated/"+c.Name, func(t *testing.T) { checkGeneratedCase(t, c) })
	}
}

func checkChoiceCase(t *testing.T, c policyvectors.TopologyChoiceCase) {
	raw := ""
	if c.Value != nil {
		raw = *c.Value
	}
	choice, err := topology.ParseChoice(raw, c.Value != nil, c.Settings)
	switch {
	case c.Expect.Error != "" && (err == nil || err.Error() != c.Expect.Error):
		t.Fatalf("ParseChoice = %v, %v; want error %q", choice, err, c.Expect.Error)
	case c.Expect.Error == "" && (err != nil || choice.String() != c.Expect.Choice):
		t.Fatalf("ParseChoice = %v, %v; want %q", choice, err, c.Expect.Choice)
	}
}

func parseCaseChoice(t *testing.T, raw string, maxLayers int) topology.Choice {
	settings := topology.DefaultSettings()
	settings.MaxLayers = maxLayers
	choice, err := topology.ParseChoice(raw, true, settings)
	if err != nil {
		t.Fatalf("the case's choice: %v", err)
	}
	return choice
}

func checkPlanCase(t *testing.T, c policyvectors.TopologyPlanCase) {
	zone := policyvectors.Zone(c.Nodes, c.MaxLayers)
	plan := topology.PlanTopology(zone, c.Members, parseCaseChoice(t, c.Choice, c.MaxLayers), c.MaxLayers)
	want := c.Expect
	if plan.Message != want.Message || !slices.Equal(plan.Nodes, want.Nodes) || !slices.Equal(plan.Layers, want.Layers) {
		t.Fatalf("plan = %v %v %q, want %v %v %q", plan.Nodes, plan.Layers, plan.Message, want.Nodes, want.Layers, want.Message)
	}
	if plan.Message == "" {
		checkPlan(t, zone, c.Members, plan)
	}
}

func checkGeneratedCase(t *testing.T, c policyvectors.TopologyGeneratedCase) {
	zone := policyvectors.Zone(c.Nodes, c.MaxLayers)
	plan := topology.PlanTopology(zone, c.Members, parseCaseChoice(t, c.Choice, c.MaxLayers), c.MaxLayers)
	switch {
	case c.Optimum == nil && (plan.Message == "" || plan.Nodes != nil):
		t.Fatalf("plan = %v, want none (no plan holds the job)", plan.Nodes)
	case c.Optimum != nil && !slices.Equal(plan.Cost, c.Optimum):
		t.Fatalf("plan %v costs %v (%s), the optimum is %v", plan.Nodes, plan.Cost, plan.Message, c.Optimum)
	case c.Optimum != nil:
		checkPlan(t, zone, c.Members, plan)
	}
}

// checkPlan checks that every member with GPUs has a node with room for it, members
// without none, and that each node's members are consecutive indices.
func checkPlan(t *testing.T, zone []topology.Node, members []int64, plan topology.Plan) {
	t.Helper()
	gpus := slices.Max(members)
	free := map[string]int64{}
	for _, node := range zone {
		free[node.Name] = node.FreeGPUs
	}
	last := map[string]int{}
	previous := ""
	for index, name := range plan.Nodes {
		if (name == "") != (members[index] == 0) {
			t.Fatalf("member %d (%d GPUs) is on %q", index, members[index], name)
		}
		if name == "" {
			continue
		}
		free[name] -= gpus
		if free[name] < 0 {
			t.Fatalf("%s is given more members than it has room for", name)
		}
		if seen, ok := last[name]; ok && previous != name {
			t.Fatalf("the members on %s are not consecutive (index %d after %d)", name, index, seen)
		}
		last[name], previous = index, name
	}
}
