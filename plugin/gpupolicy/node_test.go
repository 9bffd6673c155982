package gpupolicy

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labelledNode returns a node with the memory label set to memory, or without it
// when memory is "-".
func labelledNode(memory string) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node"}}
	if memory != "-" {
		node.Labels = map[string]string{NodeMemoryLabel: memory}
	}
	return node
}

func TestNodeMemoryMiB(t *testing.T) {
	tests := []struct {
		name string
		node *v1.Node
		want int64
		err  error
	}{
		{"valid", labelledNode("81920"), 81920, nil},
		{"plus sign", labelledNode("+22888"), 22888, nil},
		{"largest", labelledNode("1048576"), MaxGPUMemoryMiB, nil},
		{"missing", labelledNode("-"), 0, ErrInvalidNodeLabel},
		{"empty", labelledNode(""), 0, ErrInvalidNodeLabel},
		{"zero", labelledNode("0"), 0, ErrInvalidNodeLabel},
		{"above range", labelledNode("1048577"), 0, ErrInvalidNodeLabel},
		{"bytes with unit", labelledNode("80Gi"), 0, ErrInvalidNodeLabel},
		{"decimal", labelledNode("8192.0"), 0, ErrInvalidNodeLabel},
		{"nil", nil, 0, ErrMissingNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NodeMemoryMiB(tt.node, DefaultSettings())
			if err != tt.err || got != tt.want {
				t.Fatalf("NodeMemoryMiB = %d, %v; want %d, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestFitsMemory(t *testing.T) {
	need := Requirement{HasGPU: true, MinMemoryMiB: 40960}
	tests := []struct {
		name   string
		req    Requirement
		node   *v1.Node
		fits   bool
		reason string
	}{
		{"equal fits", need, labelledNode("40960"), true, ""},
		{"larger fits", need, labelledNode("81920"), true, ""},
		{"one below", need, labelledNode("40959"), false, ReasonBelowMinimum},
		{"missing label", need, labelledNode("-"), false, ReasonInvalidNodeLabel},
		{"bad label", need, labelledNode("big"), false, ReasonInvalidNodeLabel},
		{"nil node", need, nil, false, ReasonMissingNode},
		{"no minimum fits an unlabelled node", Requirement{HasGPU: true}, labelledNode("-"), true, ""},
		{"no minimum does not read the node", Requirement{}, nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fits, reason := FitsMemory(tt.req, tt.node, DefaultSettings())
			if fits != tt.fits || reason != tt.reason {
				t.Fatalf("FitsMemory = %v, %q; want %v, %q", fits, reason, tt.fits, tt.reason)
			}
		})
	}
}

func TestScores(t *testing.T) {
	gpu := Requirement{HasGPU: true}
	tests := []struct {
		name     string
		req      Requirement
		node     *v1.Node
		score    int64
		extender int64
	}{
		{"T4", gpu, labelledNode("16384"), 20, 2},
		{"A10G rounds down", gpu, labelledNode("22888"), 27, 2},
		{"L40S", gpu, labelledNode("45776"), 55, 5},
		{"one MiB below the scale", gpu, labelledNode("81919"), 99, 9},
		{"H100 at the scale", gpu, labelledNode("81920"), 100, 10},
		{"H200 capped", gpu, labelledNode("144384"), 100, 10},
		{"smallest label", gpu, labelledNode("1"), 0, 0},
		{"bad label", gpu, labelledNode("x"), 0, 0},
		{"nil node", gpu, nil, 0, 0},
		{"no GPU request", Requirement{}, labelledNode("81920"), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSettings()
			if got := Score100(tt.req, tt.node, s); got != tt.score {
				t.Errorf("Score100 = %d, want %d", got, tt.score)
			}
			if got := ExtenderScore(tt.req, tt.node, s); got != tt.extender {
				t.Errorf("ExtenderScore = %d, want %d", got, tt.extender)
			}
		})
	}
}

func TestScoreUsesConfiguredScaleAndLabel(t *testing.T) {
	s := DefaultSettings()
	s.ScoreScaleMiB = 40960
	s.NodeMemoryLabel = "example.org/vram"
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		"example.org/vram": "20480",
		NodeMemoryLabel:    "81920",
	}}}
	if got := Score100(Requirement{HasGPU: true}, node, s); got != 50 {
		t.Fatalf("Score100 = %d, want 50 (20480 of a 40960 scale)", got)
	}
}

// demoTypes are the per-GPU labels of the demo's instance types, smallest first.
var demoTypes = []struct {
	name  string
	label int64
}{{"T4", 16384}, {"A10G", 22888}, {"A100", 40960}, {"L40S", 45776}, {"H100", 81920}, {"H200", 144384}}

// TestBestFitPrefersTheSmallestSufficientGPU: for each minimum of the demo (and none),
// the smallest type that fits scores the most, and strictly more than every larger
// type also at the extender's 0..10, and scores fall as the label grows.
func TestBestFitPrefersTheSmallestSufficientGPU(t *testing.T) {
	s := DefaultSettings()
	s.ScoringStrategy = BestFit
	for _, minimum := range []int64{0, 8192, 16384, 40960, 81920, 102400} {
		req := Requirement{HasGPU: true, MinMemoryMiB: minimum}
		first := true
		var best, previous int64
		for _, gpu := range demoTypes {
			memory := NodeMemory{MiB: gpu.label}
			score := memory.Score100(req, s)
			if gpu.label < minimum {
				if score != 0 {
					t.Errorf("minimum %d: %s does not fit but scores %d", minimum, gpu.name, score)
				}
				continue
			}
			extender := score / (MaxScore / MaxExtenderScore)
			switch {
			case first:
				best, first = extender, false
			case score >= previous:
				t.Errorf("minimum %d: %s scores %d, not less than the smaller GPU's %d", minimum, gpu.name, score, previous)
			case extender >= best:
				t.Errorf("minimum %d: %s's extender score %d ties the best fit's %d", minimum, gpu.name, extender, best)
			}
			previous = score
		}
	}
}

func TestBestFitScores(t *testing.T) {
	s := DefaultSettings()
	s.ScoringStrategy = BestFit
	tests := []struct {
		name  string
		req   Requirement
		node  *v1.Node
		score int64
	}{
		{"exact fit", Requirement{HasGPU: true, MinMemoryMiB: 40960}, labelledNode("40960"), 100},
		{"1 MiB spare rounds down", Requirement{HasGPU: true, MinMemoryMiB: 40959}, labelledNode("40960"), 99},
		{"spare equal to the scale halves", Requirement{HasGPU: true, MinMemoryMiB: 16384}, labelledNode("98304"), 50},
		{"no minimum: the whole label is spare", Requirement{HasGPU: true}, labelledNode("81920"), 50},
		{"below the minimum", Requirement{HasGPU: true, MinMemoryMiB: 81920}, labelledNode("16384"), 0},
		{"bad label", Requirement{HasGPU: true}, labelledNode("80Gi"), 0},
		{"nil node", Requirement{HasGPU: true}, nil, 0},
		{"no GPU request", Requirement{}, labelledNode("16384"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Score100(tt.req, tt.node, s); got != tt.score {
				t.Errorf("Score100 = %d, want %d", got, tt.score)
			}
		})
	}
}
