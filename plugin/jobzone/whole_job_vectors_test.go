package jobzone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestWholeJobVectors holds placeWholeJob to the whole_jobs cases of
// tests/vectors/zone_cases.json, the cases policy/whole_job.py is tested against.
func TestWholeJobVectors(t *testing.T) {
	file := policyvectors.MustLoadZone(t)
	if len(file.WholeJobs) == 0 {
		t.Fatalf("%s has no whole_jobs cases", policyvectors.ZoneFile)
	}
	agreed := 0
	for _, c := range file.WholeJobs {
		if t.Run(c.Name, func(t *testing.T) { checkWholeJobCase(t, c) }) {
			agreed++
		}
	}
	t.Logf("whole-job vectors: %d of %d cases agreed", agreed, len(file.WholeJobs))
}

func checkWholeJobCase(t *testing.T, c policyvectors.ZoneWholeJobCase) {
	shapes := make([]podShape, len(c.Members))
	admitted := make([][]bool, len(c.Members))
	for m, member := range c.Members {
		shapes[m] = requestShape(member.Requests, v1.ResourceName(c.GPUResource))
		if len(member.Admitted) != len(c.Nodes) {
			t.Fatalf("member %d: %d admitted entries for %d nodes", m, len(member.Admitted), len(c.Nodes))
		}
		admitted[m] = member.Admitted
	}
	free := make([]nodeFree, len(c.Nodes))
	for i, node := range c.Nodes {
		free[i] = freeOfList(node)
	}
	if got := placeWholeJob(shapes, admitted, free); got != c.Expect.Count {
		t.Errorf("%s: %d members held, want %d", c.Description, got, c.Expect.Count)
	}
}

// freeOfList reads a vector's free resources as freeOn reads a node's.
func freeOfList(list v1.ResourceList) nodeFree {
	quantity := func(name v1.ResourceName) resource.Quantity { return list[name] }
	pods, cpu, memory, storage := quantity(v1.ResourcePods), quantity(v1.ResourceCPU), quantity(v1.ResourceMemory), quantity(v1.ResourceEphemeralStorage)
	free := nodeFree{
		pods: pods.Value(), milliCPU: cpu.MilliValue(), memory: memory.Value(), ephemeralStorage: storage.Value(),
		scalars: map[v1.ResourceName]int64{},
	}
	for name, amount := range list {
		switch name {
		case v1.ResourcePods, v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
		default:
			free.scalars[name] = amount.Value()
		}
	}
	return free
}
