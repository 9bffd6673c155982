package gpupolicy_test

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestAffinityVectors holds NodeAffinityPatch to tests/vectors/affinity_cases.json, the
// file policy/node_affinity.py is tested against: the pod each patch produces must be
// the same (Go re-encodes untouched terms, so the patches are compared by their effect),
// and a second call on the patched pod must return nothing.
func TestAffinityVectors(t *testing.T) {
	file := policyvectors.MustLoadAffinity(t)
	agreed := 0
	for _, c := range file.Cases {
		if t.Run(c.Name, func(t *testing.T) { checkAffinityCase(t, c) }) {
			agreed++
		}
	}
	t.Logf("affinity vectors: %d of %d cases agreed", agreed, len(file.Cases))
}

func checkAffinityCase(t *testing.T, c policyvectors.AffinityCase) {
	pod, ok := policyvectors.MustDecodePod(t, c.Pod, c.Expect.DecodeError)
	if !ok {
		return
	}
	ops, err := gpupolicy.NodeAffinityPatch(pod, c.Settings, c.CapacitySettings)
	if !policyvectors.MustMatchError(t, err, c.Expect.Error) {
		return
	}
	var want []json.RawMessage
	if err := json.Unmarshal(c.Expect.Patch, &want); err != nil {
		t.Fatalf("the vector's patch: %v", err)
	}
	if len(ops) != len(want) {
		t.Fatalf("%d operations, want %d: %+v", len(ops), len(want), ops)
	}
	if len(ops) == 0 {
		return
	}
	got, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	gotPod, wantPod := applied(t, c.Pod, got), applied(t, c.Pod, c.Expect.Patch)
	if !apiequality.Semantic.DeepEqual(gotPod, wantPod) {
		t.Fatalf("patched pod differs:\n got %s\nwant %s", got, c.Expect.Patch)
	}
	again, err := gpupolicy.NodeAffinityPatch(gotPod, c.Settings, c.CapacitySettings)
	if err != nil || len(again) != 0 {
		t.Fatalf("second call = %+v, %v; want nothing", again, err)
	}
}

func applied(t *testing.T, podJSON, patchJSON []byte) *v1.Pod {
	t.Helper()
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		t.Fatalf("decoding patch %s: %v", patchJSON, err)
	}
	out, err := patch.Apply(podJSON)
	if err != nil {
		t.Fatalf("applying patch %s: %v", patchJSON, err)
	}
	pod := &v1.Pod{}
	if err := json.Unmarshal(out, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}
