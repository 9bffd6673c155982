package gpuscheduler

import (
	"context"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestPluginVectors runs the plugin itself (PreFilter, Filter, Score on the
// scheduler's NodeInfo) over the shared policy vectors: plugin mode must give the
// answers the extender gives on the same pod and node, whether the plugin reads the
// node's label on each call or finds it in its node label cache.
func TestPluginVectors(t *testing.T) {
	file, dir := policyvectors.MustLoadPolicy(t)
	agreed, run := 0, 0
	for _, c := range file.Cases {
		if c.Expect.DecodeError != "" {
			continue // no pod or node reaches the plugin
		}
		run++
		if t.Run(c.Name, func(t *testing.T) {
			t.Run("label-read-per-call", func(t *testing.T) { checkPluginCase(t, c, false) })
			t.Run("label-cached", func(t *testing.T) { checkPluginCase(t, c, true) })
		}) {
			agreed++
		}
	}
	t.Logf("plugin vectors: %d of %d decodable cases agreed, label read per call and cached (%s)", agreed, run, dir)
}

func checkPluginCase(t *testing.T, c policyvectors.PolicyCase, cached bool) {
	pod, err := c.DecodePod()
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.DecodeNode()
	if err != nil {
		t.Fatal(err)
	}
	if pod == nil {
		return // the framework never schedules a nil pod; FromPod's answer is checked in gpupolicy
	}
	pl := &GPUScheduler{settings: c.Settings}
	if cached {
		pl.nodes = newNodeMemoryCache(c.Settings)
		pl.nodes.handlers().OnAdd(node, true)
		if _, hit := pl.nodes.lookup(node); node != nil && !hit {
			t.Fatalf("the node label cache does not hold the node it was given")
		}
	}
	info := framework.NewNodeInfo()
	if node != nil {
		info.SetNode(node)
	}
	for _, withPreFilter := range []bool{false, true} {
		state := framework.NewCycleState()
		filterRuns := true
		if withPreFilter {
			_, status := pl.PreFilter(context.Background(), state, pod, nil)
			filterRuns = !status.IsSkip()
		}
		code, message := fwk.Success, ""
		if filterRuns {
			status := pl.Filter(context.Background(), state, pod, info)
			code, message = status.Code(), status.Message()
		}
		score, scoreStatus := pl.Score(context.Background(), state, pod, info)

		switch {
		case node == nil && filterRuns:
			assertCode(t, withPreFilter, "Filter", code, message, fwk.Error, gpupolicy.ReasonMissingNode)
			assertCode(t, withPreFilter, "Score", scoreStatus.Code(), scoreStatus.Message(), fwk.Error, gpupolicy.ReasonMissingNode)
		case c.Expect.Error != nil:
			assertCode(t, withPreFilter, "Filter", code, message, fwk.UnschedulableAndUnresolvable, *c.Expect.Error)
		case node == nil:
			// PreFilter skipped Filter (no minimum): the vector says such a pod fits.
			if !*c.Expect.Fits {
				t.Errorf("PreFilter skipped Filter, but the vector says the pod does not fit")
			}
		default:
			wantCode := fwk.Success
			if !*c.Expect.Fits {
				wantCode = fwk.UnschedulableAndUnresolvable
			}
			assertCode(t, withPreFilter, "Filter", code, message, wantCode, *c.Expect.Reason)
			if !scoreStatus.IsSuccess() || score != *c.Expect.Score100 {
				t.Errorf("PreFilter %v: Score = %d, %v; want %d", withPreFilter, score, scoreStatus, *c.Expect.Score100)
			}
		}
	}
}

func assertCode(t *testing.T, withPreFilter bool, what string, code fwk.Code, message string, wantCode fwk.Code, wantMessage string) {
	t.Helper()
	if code != wantCode || (wantCode != fwk.Success && message != wantMessage) {
		t.Errorf("PreFilter %v: %s = %v %q; want %v %q", withPreFilter, what, code, message, wantCode, wantMessage)
	}
}
