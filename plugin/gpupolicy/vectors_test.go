package gpupolicy_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestPolicyVectors holds the Go policy to every case of tests/vectors/policy_cases.json,
// the file the Python policy is tested against too.
func TestPolicyVectors(t *testing.T) {
	file, dir := policyvectors.MustLoadPolicy(t)
	agreed := 0
	for _, c := range file.Cases {
		if t.Run(c.Name, func(t *testing.T) { checkPolicyCase(t, c, c.Settings) }) {
			agreed++
		}
	}
	t.Logf("policy vectors: %d of %d cases agreed (%s)", agreed, len(file.Cases), dir)
}

func checkPolicyCase(t *testing.T, c policyvectors.PolicyCase, s gpupolicy.Settings) {
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

	req, err := gpupolicy.FromPod(pod, s)
	if c.Expect.Error != nil {
		if err == nil || err.Error() != *c.Expect.Error {
			t.Fatalf("FromPod error = %v, want %q", err, *c.Expect.Error)
		}
		return
	}
	if err != nil {
		t.Fatalf("FromPod error = %v, want none", err)
	}
	want := c.Expect.Requirement.Requirement()
	if req != want {
		t.Fatalf("FromPod = %+v, want %+v", req, want)
	}
	fits, reason := gpupolicy.FitsMemory(req, node, s)
	if fits != *c.Expect.Fits || reason != *c.Expect.Reason {
		t.Errorf("FitsMemory = %v, %q; want %v, %q", fits, reason, *c.Expect.Fits, *c.Expect.Reason)
	}
	// The label read once (what the plugin's cache holds) answers as FitsMemory does.
	memory := gpupolicy.ReadNodeMemory(node, s)
	if got := memory.ExtenderScore(req, s); got != *c.Expect.ExtenderScore {
		t.Errorf("ExtenderScore = %d, want %d", got, *c.Expect.ExtenderScore)
	}
	if fits, reason := memory.Fits(req); fits != *c.Expect.Fits || reason != *c.Expect.Reason {
		t.Errorf("ReadNodeMemory(...).Fits = %v, %q; want %v, %q", fits, reason, *c.Expect.Fits, *c.Expect.Reason)
	}
	if got := memory.Score100(req, s); got != *c.Expect.Score100 {
		t.Errorf("ReadNodeMemory(...).Score100 = %d, want %d", got, *c.Expect.Score100)
	}
}

// TestQuantityVectors holds Go's resource.Quantity JSON decoding (what the policy's
// GPU request rests on) to tests/vectors/quantity_cases.json, the cases the Python
// quantity parser is tested against.
func TestQuantityVectors(t *testing.T) {
	dir, err := policyvectors.Dir()
	if err != nil {
		t.Fatal(err)
	}
	file, err := policyvectors.LoadQuantities(dir)
	if err != nil {
		t.Fatal(err)
	}
	agreed := 0
	for i, c := range file.Cases {
		if t.Run(fmt.Sprintf("%d", i), func(t *testing.T) { checkQuantityCase(t, c) }) {
			agreed++
		}
	}
	t.Logf("quantity vectors: %d of %d cases agreed (%s)", agreed, len(file.Cases), dir)
}

func checkQuantityCase(t *testing.T, c policyvectors.QuantityCase) {
	var q resource.Quantity
	err := json.Unmarshal([]byte(c.JSON), &q)
	if c.Value == nil {
		if err == nil {
			t.Fatalf("json %s: Go decodes it to %s, the vector says Go refuses it",
				c.JSON, policyvectors.QuantityDecimal(&q))
		}
		return
	}
	want, parseErr := policyvectors.ParseDecimal(*c.Value)
	if parseErr != nil {
		t.Fatalf("json %s: the vector's value: %v", c.JSON, parseErr)
	}
	if err != nil {
		t.Fatalf("json %s: Go refuses it (%v), the vector says %s", c.JSON, err, *c.Value)
	}
	if got := policyvectors.QuantityDecimal(&q); !got.Equal(want) {
		t.Fatalf("json %s: Go decodes it to %s, the vector says %s (%s)", c.JSON, got, want, *c.Value)
	}
}
