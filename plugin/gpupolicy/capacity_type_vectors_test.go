package gpupolicy_test

import (
	"testing"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestCapacityTypeVectors holds the Go capacity-type rule to every case of
// tests/vectors/capacity_type_cases.json, the file policy/capacity_type.py is tested
// against too.
func TestCapacityTypeVectors(t *testing.T) {
	file, dir := policyvectors.MustLoadCapacityType(t)
	agreed := 0
	for _, c := range file.Cases {
		if t.Run(c.Name, func(t *testing.T) { checkCapacityTypeCase(t, c) }) {
			agreed++
		}
	}
	t.Logf("capacity-type vectors: %d of %d cases agreed (%s)", agreed, len(file.Cases), dir)
}

func checkCapacityTypeCase(t *testing.T, c policyvectors.CapacityTypeCase) {
	pod, podErr := c.DecodePod()
	node, nodeErr := c.DecodeNode()
	switch c.Expect.DecodeError {
	case "pod":
		if podErr == nil {
			t.Fatalf("the pod decoded, but the vector says Go must refuse it")
		}
		return
	case "node":
		if nodeErr == nil {
			t.Fatalf("the node decoded, but the vector says Go must refuse it")
		}
		return
	}
	if podErr != nil || nodeErr != nil {
		t.Fatalf("decoding failed: pod: %v; node: %v", podErr, nodeErr)
	}
	s := c.Settings
	choice, err := gpupolicy.CapacityChoiceFromPod(pod, s)
	if c.Expect.Error != nil {
		if err == nil || err.Error() != *c.Expect.Error {
			t.Fatalf("CapacityChoiceFromPod error = %v, want %q", err, *c.Expect.Error)
		}
		return
	}
	if err != nil || string(choice) != *c.Expect.Choice {
		t.Fatalf("CapacityChoiceFromPod = %q, %v; want %q", choice, err, *c.Expect.Choice)
	}
	if node != nil {
		if got := gpupolicy.NodeCapacityType(node, s); c.Expect.CapacityType == nil || string(got) != *c.Expect.CapacityType {
			t.Errorf("NodeCapacityType = %q, want %v", got, c.Expect.CapacityType)
		}
	}
	if fits, reason := gpupolicy.FitsCapacityType(choice, node, s); fits != *c.Expect.Fits || reason != *c.Expect.Reason {
		t.Errorf("FitsCapacityType = %v, %q; want %v, %q", fits, reason, *c.Expect.Fits, *c.Expect.Reason)
	}
	if got := gpupolicy.CapacityScore100(choice, node, s); got != *c.Expect.Score100 {
		t.Errorf("CapacityScore100 = %d, want %d", got, *c.Expect.Score100)
	}
	// The node read once (what a plugin may keep per node) answers the same.
	read := gpupolicy.ReadNodeCapacity(node, s)
	if fits, reason := read.Fits(choice); fits != *c.Expect.Fits || reason != *c.Expect.Reason {
		t.Errorf("ReadNodeCapacity(...).Fits = %v, %q; want %v, %q", fits, reason, *c.Expect.Fits, *c.Expect.Reason)
	}
	if got := read.Score100(choice); got != *c.Expect.Score100 {
		t.Errorf("ReadNodeCapacity(...).Score100 = %d, want %d", got, *c.Expect.Score100)
	}
}
