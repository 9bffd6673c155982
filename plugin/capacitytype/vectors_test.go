package capacitytype

import (
	"context"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestPluginVectors runs the plugin itself (PreFilter, Filter, PreScore, Score on the
// scheduler's NodeInfo) over the shared capacity-type vectors: plugin mode must give
// the answers the extender gives on the same pod and node.
func TestPluginVectors(t *testing.T) {
	file, dir := policyvectors.MustLoadCapacityType(t)
	agreed, run := 0, 0
	for _, c := range file.Cases {
		if c.Expect.DecodeError != "" {
			continue // no pod or node reaches the plugin
		}
		run++
		if t.Run(c.Name, func(t *testing.T) { checkPluginCase(t, c) }) {
			agreed++
		}
	}
	t.Logf("CapacityType plugin vectors: %d of %d decodable cases agreed (%s)", agreed, run, dir)
}

func checkPluginCase(t *testing.T, c policyvectors.CapacityTypeCase) {
	pod, err := c.DecodePod()
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.DecodeNode()
	if err != nil {
		t.Fatal(err)
	}
	if pod == nil {
		return // the framework never schedules a nil pod; the policy's answer is checked in gpupolicy
	}
	pl := &CapacityType{settings: c.Settings}
	info := framework.NewNodeInfo()
	if node != nil {
		info.SetNode(node)
	}
	ctx := context.Background()
	for _, withPreFilter := range []bool{false, true} {
		state := framework.NewCycleState()
		filterRuns, scoreRuns := true, true
		if withPreFilter {
			_, status := pl.PreFilter(ctx, state, pod, nil)
			filterRuns = !status.IsSkip()
			scoreRuns = !pl.PreScore(ctx, state, pod, nil).IsSkip()
		}
		code, message := fwk.Success, ""
		if filterRuns {
			status := pl.Filter(ctx, state, pod, info)
			code, message = status.Code(), status.Message()
		}
		score, scoreStatus := int64(0), (*fwk.Status)(nil)
		if scoreRuns {
			score, scoreStatus = pl.Score(ctx, state, pod, info)
		}
		switch {
		case c.Expect.Error != nil:
			want := fwk.UnschedulableAndUnresolvable
			if node == nil {
				want = fwk.Error
			}
			if code != want || (node != nil && message != *c.Expect.Error) {
				t.Errorf("PreFilter %v: Filter = %v %q; want %v %q", withPreFilter, code, message, want, *c.Expect.Error)
			}
		case node == nil && filterRuns:
			if code != fwk.Error || message != gpupolicy.ReasonMissingNode {
				t.Errorf("PreFilter %v: Filter = %v %q; want Error %q", withPreFilter, code, message, gpupolicy.ReasonMissingNode)
			}
		case node == nil:
			if !*c.Expect.Fits {
				t.Errorf("PreFilter skipped Filter, but the vector says the pod does not fit")
			}
		default:
			wantCode := fwk.Success
			if !*c.Expect.Fits {
				wantCode = fwk.UnschedulableAndUnresolvable
			}
			if code != wantCode || message != *c.Expect.Reason {
				t.Errorf("PreFilter %v: Filter = %v %q; want %v %q", withPreFilter, code, message, wantCode, *c.Expect.Reason)
			}
			if !scoreStatus.IsSuccess() || score != *c.Expect.Score100 {
				t.Errorf("PreFilter %v: Score = %d, %v; want %d", withPreFilter, score, scoreStatus, *c.Expect.Score100)
			}
		}
	}
}
