package gpupolicy

import (
	"fmt"
	"slices"
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

// invalidOurs is the reason for a node whose own memory label is present but invalid.
var invalidOurs = fmt.Sprintf(ReasonInvalidMemoryLabelFormat, NodeMemoryLabel)

// TestReadNodeMemory: our label alone, read as the policy reads it, or the reason it cannot be.
func TestReadNodeMemory(t *testing.T) {
	tests := []struct {
		name string
		node *v1.Node
		want int64
		err  string
	}{
		{"valid", labelledNode("81920"), 81920, ""},
		{"plus sign", labelledNode("+22888"), 22888, ""},
		{"largest", labelledNode("1048576"), MaxGPUMemoryMiB, ""},
		{"missing", labelledNode("-"), 0, ReasonInvalidNodeLabel},
		{"empty", labelledNode(""), 0, invalidOurs},
		{"zero", labelledNode("0"), 0, invalidOurs},
		{"above range", labelledNode("1048577"), 0, invalidOurs},
		{"bytes with unit", labelledNode("80Gi"), 0, invalidOurs},
		{"decimal", labelledNode("8192.0"), 0, invalidOurs},
		{"nil", nil, 0, ReasonMissingNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadNodeMemory(tt.node, DefaultSettings())
			if got.Reason != tt.err || (tt.err == "" && got.MiB != tt.want) {
				t.Fatalf("ReadNodeMemory = %+v; want %d, %q", got, tt.want, tt.err)
			}
		})
	}
}

// schemeNode returns a node carrying exactly these labels.
func schemeNode(labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node", Labels: labels}}
}

// TestReadNodeMemorySchemes: the first scheme label present decides, in the order
// ours, Karpenter's, Auto Mode's, GFD's, the instance type; an invalid one decides too.
func TestReadNodeMemorySchemes(t *testing.T) {
	s := DefaultSettings()
	s.InstanceTypeGPUMemoryMiB = map[string]int64{"g5.xlarge": 22888, "p5.48xlarge": 81920}
	tests := []struct {
		name   string
		labels map[string]string
		want   NodeMemory
	}{
		{"ours over Karpenter's", map[string]string{NodeMemoryLabel: "40960", KarpenterGPUMemoryLabel: "16384"}, NodeMemory{MiB: 40960}},
		{"Karpenter's over Auto Mode's", map[string]string{KarpenterGPUMemoryLabel: "45776", EKSAutoGPUMemoryLabel: "16384"}, NodeMemory{MiB: 45776}},
		{"Auto Mode's over GFD's", map[string]string{EKSAutoGPUMemoryLabel: "22888", GFDGPUMemoryLabel: "15360"}, NodeMemory{MiB: 22888}},
		{"GFD's over the instance type", map[string]string{GFDGPUMemoryLabel: "15360", InstanceTypeLabel: "p5.48xlarge"}, NodeMemory{MiB: 15360}},
		{"the instance type, in the table", map[string]string{InstanceTypeLabel: "g5.xlarge"}, NodeMemory{MiB: 22888}},
		{"the instance type, not in the table", map[string]string{InstanceTypeLabel: "m5.xlarge"}, NodeMemory{Reason: "instance type m5.xlarge is not in the GPU table"}},
		{"an invalid vendor label decides", map[string]string{KarpenterGPUMemoryLabel: "16Gi", EKSAutoGPUMemoryLabel: "45776"}, NodeMemory{Reason: "invalid GPU-memory label karpenter.k8s.aws/instance-gpu-memory (not 1..1048576 MiB)"}},
		{"an invalid own label decides", map[string]string{NodeMemoryLabel: "", InstanceTypeLabel: "g5.xlarge"}, NodeMemory{Reason: invalidOurs}},
		{"none of the labels", map[string]string{"kubernetes.io/os": "linux"}, NodeMemory{Reason: ReasonInvalidNodeLabel}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadNodeMemory(schemeNode(tt.labels), s); got != tt.want {
				t.Fatalf("ReadNodeMemory = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVendorMemoryLabelsAreASetting(t *testing.T) {
	node := schemeNode(map[string]string{KarpenterGPUMemoryLabel: "16384", GFDGPUMemoryLabel: "15360", "example.org/vram": "40960"})
	s := DefaultSettings()
	s.VendorMemoryLabels = []string{GFDGPUMemoryLabel, KarpenterGPUMemoryLabel}
	if got := ReadNodeMemory(node, s); got.MiB != 15360 {
		t.Errorf("GFD's first: %+v, want 15360", got)
	}
	s.VendorMemoryLabels = []string{"example.org/vram"}
	if got := ReadNodeMemory(node, s); got.MiB != 40960 {
		t.Errorf("an operator's own label: %+v, want 40960", got)
	}
	s.VendorMemoryLabels = nil
	if got := ReadNodeMemory(node, s); got.Reason != ReasonInvalidNodeLabel {
		t.Errorf("no vendor labels: %+v, want %q", got, ReasonInvalidNodeLabel)
	}
	if defaults := DefaultSettings().VendorMemoryLabels; !slices.Equal(defaults, []string{KarpenterGPUMemoryLabel, EKSAutoGPUMemoryLabel, GFDGPUMemoryLabel}) {
		t.Errorf("default vendor labels = %v", defaults)
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
		{"bad label", need, labelledNode("big"), false, invalidOurs},
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
			memory := ReadNodeMemory(tt.node, s)
			if got := memory.Score100(tt.req, s); got != tt.score {
				t.Errorf("Score100 = %d, want %d", got, tt.score)
			}
			if got := memory.ExtenderScore(tt.req, s); got != tt.extender {
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
	if got := ReadNodeMemory(node, s).Score100(Requirement{HasGPU: true}, s); got != 50 {
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
			if got := ReadNodeMemory(tt.node, s).Score100(tt.req, s); got != tt.score {
				t.Errorf("Score100 = %d, want %d", got, tt.score)
			}
		})
	}
}
