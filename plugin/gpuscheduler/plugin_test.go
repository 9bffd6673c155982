package gpuscheduler

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/plugintest"
)

// newPlugin builds the plugin through its factory, as the scheduler does.
func newPlugin(t *testing.T, args runtime.Object) *GPUScheduler {
	t.Helper()
	plugin, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return plugin.(*GPUScheduler)
}

// gpuPod returns a pending pod requesting gpus GPUs (none when empty) with the
// minimum annotation set to minimum, or without it when minimum is "-".
func gpuPod(gpus, minimum string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: types.UID("uid-train")}}
	container := v1.Container{Name: "train", Image: "busybox:1.37.0"}
	if gpus != "" {
		container.Resources.Requests = v1.ResourceList{gpupolicy.GPUResource: resource.MustParse(gpus)}
	}
	pod.Spec.Containers = []v1.Container{container}
	if minimum != "-" {
		pod.Annotations = map[string]string{gpupolicy.MinMemoryAnnotation: minimum}
	}
	return pod
}

// gpuNode returns a node with the GPU-memory label set to memory, or without it when
// memory is "-".
func gpuNode(name, memory string) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if memory != "-" {
		node.Labels[gpupolicy.NodeMemoryLabel] = memory
	}
	node.Status.Allocatable = v1.ResourceList{gpupolicy.GPUResource: resource.MustParse("8")}
	return node
}

// nodeInfo wraps a node in the scheduler's real NodeInfo, with one pod running on it.
func nodeInfo(node *v1.Node) *framework.NodeInfo {
	running := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "ml", UID: "uid-running"},
		Spec: v1.PodSpec{NodeName: node.Name}}
	info := framework.NewNodeInfo(running)
	info.SetNode(node)
	return info
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name   string
		pod    *v1.Pod
		node   *v1.Node
		code   fwk.Code
		reason string
	}{
		{"label above minimum", gpuPod("1", "40960"), gpuNode("a100", "81920"), fwk.Success, ""},
		{"label equal to minimum", gpuPod("1", "40960"), gpuNode("a100", "40960"), fwk.Success, ""},
		{"label below minimum", gpuPod("1", "40960"), gpuNode("a10g", "22888"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonBelowMinimum},
		{"label missing", gpuPod("1", "40960"), gpuNode("plain", "-"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonInvalidNodeLabel},
		{"label invalid", gpuPod("1", "40960"), gpuNode("odd", "80Gi"), fwk.UnschedulableAndUnresolvable, "invalid GPU-memory label training.example.com/gpu-memory-mib (not 1..1048576 MiB)"},
		{"no minimum fits an unlabelled node", gpuPod("1", "-"), gpuNode("plain", "-"), fwk.Success, ""},
		{"no GPU pod fits anywhere", gpuPod("", "-"), gpuNode("plain", "-"), fwk.Success, ""},
		{"bad annotation", gpuPod("1", "40 GiB"), gpuNode("a100", "81920"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonInvalidMinMemory},
		{"minimum without GPU request", gpuPod("", "40960"), gpuNode("a100", "81920"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonRequiresGPURequest},
	}
	pl := newPlugin(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Without PreFilter state (Filter computes the requirement itself) ...
			assertStatus(t, "Filter alone", pl.Filter(context.Background(), framework.NewCycleState(), tt.pod, nodeInfo(tt.node)), tt.code, tt.reason)
			// ... and after PreFilter, whose state Filter reads; a Skip means the
			// framework would not call Filter, which must then have passed the node.
			state := framework.NewCycleState()
			_, pre := pl.PreFilter(context.Background(), state, tt.pod, nil)
			if pre.IsSkip() {
				if tt.code != fwk.Success {
					t.Fatalf("PreFilter skipped Filter for a pod Filter rejects")
				}
				return
			}
			if !pre.IsSuccess() {
				t.Fatalf("PreFilter = %v, want success or skip", pre)
			}
			assertStatus(t, "Filter after PreFilter", pl.Filter(context.Background(), state, tt.pod, nodeInfo(tt.node)), tt.code, tt.reason)
		})
	}
}

func assertStatus(t *testing.T, what string, status *fwk.Status, code fwk.Code, reason string) {
	t.Helper()
	if status.Code() != code {
		t.Fatalf("%s: code %v (%q), want %v", what, status.Code(), status.Message(), code)
	}
	if code != fwk.Success && status.Message() != reason {
		t.Fatalf("%s: message %q, want %q", what, status.Message(), reason)
	}
}

func TestFilterMissingNode(t *testing.T) {
	pl := newPlugin(t, nil)
	pod := gpuPod("1", "40960")
	for name, info := range map[string]fwk.NodeInfo{
		"nil NodeInfo":            nil,
		"NodeInfo without a node": framework.NewNodeInfo(),
		"typed nil NodeInfo":      (*framework.NodeInfo)(nil),
	} {
		t.Run(name, func(t *testing.T) {
			assertStatus(t, "Filter", pl.Filter(context.Background(), framework.NewCycleState(), pod, info), fwk.Error, gpupolicy.ReasonMissingNode)
			score, status := pl.Score(context.Background(), framework.NewCycleState(), pod, info)
			if score != 0 {
				t.Errorf("Score = %d, want 0", score)
			}
			assertStatus(t, "Score", status, fwk.Error, gpupolicy.ReasonMissingNode)
		})
	}
}

func TestPreFilter(t *testing.T) {
	pl := newPlugin(t, nil)
	tests := []struct {
		name string
		pod  *v1.Pod
		skip bool
	}{
		{"minimum: Filter runs", gpuPod("1", "16384"), false},
		{"invalid pod: Filter runs and rejects every node", gpuPod("1", "zero"), false},
		{"no minimum: Filter skipped", gpuPod("1", "-"), true},
		{"no GPU: Filter skipped", gpuPod("", "-"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			result, status := pl.PreFilter(context.Background(), state, tt.pod, nil)
			if result != nil {
				t.Errorf("PreFilterResult = %v, want nil (all nodes)", result)
			}
			if status.IsSkip() != tt.skip || (!tt.skip && !status.IsSuccess()) {
				t.Fatalf("PreFilter status = %v, want skip=%v", status, tt.skip)
			}
			if _, err := state.Read(stateKey); err != nil {
				t.Fatalf("PreFilter left no state for Score: %v", err)
			}
		})
	}
	if pl.PreFilterExtensions() != nil {
		t.Error("PreFilterExtensions must be nil")
	}
}

// TestFilterReadsPreFilterState proves the cycle state is used: a state written for
// a stricter pod makes Filter reject a node the pod itself would fit.
func TestFilterReadsPreFilterState(t *testing.T) {
	pl := newPlugin(t, nil)
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(context.Background(), state, gpuPod("1", "81920"), nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	lenient := gpuPod("1", "16384")
	status := pl.Filter(context.Background(), state, lenient, nodeInfo(gpuNode("l40s", "45776")))
	assertStatus(t, "Filter", status, fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonBelowMinimum)
	cloned := state.Clone()
	status = pl.Filter(context.Background(), cloned, lenient, nodeInfo(gpuNode("l40s", "45776")))
	assertStatus(t, "Filter on a cloned state", status, fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonBelowMinimum)
}

func TestScore(t *testing.T) {
	pl := newPlugin(t, nil)
	tests := []struct {
		name  string
		pod   *v1.Pod
		node  *v1.Node
		score int64
	}{
		{"T4", gpuPod("1", "-"), gpuNode("t4", "16384"), 20},
		{"A10G", gpuPod("1", "16384"), gpuNode("a10g", "22888"), 27},
		{"H100", gpuPod("1", "-"), gpuNode("h100", "81920"), 100},
		{"H200 capped", gpuPod("1", "-"), gpuNode("h200", "144384"), 100},
		{"unlabelled", gpuPod("1", "-"), gpuNode("plain", "-"), 0},
		{"no GPU request", gpuPod("", "-"), gpuNode("h100", "81920"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, withState := range []bool{false, true} {
				state := framework.NewCycleState()
				if withState {
					pl.PreFilter(context.Background(), state, tt.pod, nil)
				}
				score, status := pl.Score(context.Background(), state, tt.pod, nodeInfo(tt.node))
				if !status.IsSuccess() || score != tt.score {
					t.Fatalf("Score (PreFilter state %v) = %d, %v; want %d", withState, score, status, tt.score)
				}
				if score < 0 || score > fwk.MaxNodeScore {
					t.Fatalf("score %d outside 0..%d", score, fwk.MaxNodeScore)
				}
			}
		})
	}
	if pl.ScoreExtensions() != nil {
		t.Error("ScoreExtensions must be nil")
	}
}

func TestScoreInvalidPodIsAnError(t *testing.T) {
	pl := newPlugin(t, nil)
	score, status := pl.Score(context.Background(), framework.NewCycleState(), gpuPod("1", "-5"), nodeInfo(gpuNode("h100", "81920")))
	if score != 0 {
		t.Errorf("score = %d, want 0", score)
	}
	assertStatus(t, "Score", status, fwk.Error, gpupolicy.ReasonInvalidMinMemory)
}

func TestSignPod(t *testing.T) {
	pl := newPlugin(t, nil)
	sign := func(pod *v1.Pod) string {
		t.Helper()
		fragments, status := pl.SignPod(context.Background(), pod)
		if !status.IsSuccess() {
			t.Fatalf("SignPod: %v", status)
		}
		data, err := json.Marshal(fragments)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	other := gpuPod("1", "40960")
	other.Name, other.UID = "other", "uid-other"
	other.Spec.Containers[0].Image = "cuda:12"
	if sign(gpuPod("1", "40960")) != sign(other) {
		t.Error("pods with the same requirement must sign the same")
	}
	if sign(gpuPod("1", "40960")) == sign(gpuPod("1", "16384")) {
		t.Error("pods with different minimums must sign differently")
	}
	if sign(gpuPod("1", "-")) == sign(gpuPod("", "-")) {
		t.Error("a GPU pod and a CPU pod must sign differently (they score differently)")
	}
	if _, status := pl.SignPod(context.Background(), gpuPod("1", "x")); status.Code() != fwk.Unschedulable {
		t.Errorf("an invalid pod must not be signed, got %v", status)
	}
}

func TestArgs(t *testing.T) {
	tests := []plugintest.ArgsCase[gpupolicy.Settings]{
		{Name: "nil Args: defaults", Args: nil, Want: gpupolicy.DefaultSettings()},
		{Name: "empty object: defaults", Args: &runtime.Unknown{Raw: []byte(`{}`)}, Want: gpupolicy.DefaultSettings()},
		{Name: "no raw data: defaults", Args: &runtime.Unknown{}, Want: gpupolicy.DefaultSettings()},
		{
			Name: "every field",
			Args: &runtime.Unknown{ContentType: runtime.ContentTypeJSON, Raw: []byte(
				`{"minMemoryAnnotation":"example.org/vram","nodeMemoryLabel":"example.org/gpu-mib","gpuResource":"amd.com/gpu","scoreScaleMiB":196608,"scoringStrategy":"best-fit",` +
					`"vendorMemoryLabels":["example.org/vendor-mib"],"instanceTypeGPUMemoryMiB":{"g5.xlarge":22888}}`)},
			Want: gpupolicy.Settings{MinMemoryAnnotation: "example.org/vram", NodeMemoryLabel: "example.org/gpu-mib", GPUResource: "amd.com/gpu", ScoreScaleMiB: 196608, ScoringStrategy: gpupolicy.BestFit,
				VendorMemoryLabels: []string{"example.org/vendor-mib"}, InstanceTypeGPUMemoryMiB: map[string]int64{"g5.xlarge": 22888}},
		},
		{
			Name: "YAML, the GPU-memory schemes",
			Args: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("vendorMemoryLabels: []\ninstanceTypeGPUMemoryMiB:\n  g4dn.xlarge: 16384\n  p5.48xlarge: 81920\n")},
			Want: func() gpupolicy.Settings {
				s := gpupolicy.DefaultSettings()
				s.VendorMemoryLabels = []string{}
				s.InstanceTypeGPUMemoryMiB = map[string]int64{"g4dn.xlarge": 16384, "p5.48xlarge": 81920}
				return s
			}(),
		},
		{Name: "table entry out of range", Args: &runtime.Unknown{Raw: []byte(`{"instanceTypeGPUMemoryMiB":{"g5.xlarge":0}}`)}, WantErr: `instanceTypeGPUMemoryMiB["g5.xlarge"] must be 1..1048576, got 0`},
		{Name: "table entry as a quantity", Args: &runtime.Unknown{Raw: []byte(`{"instanceTypeGPUMemoryMiB":{"g5.xlarge":"22Gi"}}`)}, WantErr: "instanceTypeGPUMemoryMiB"},
		{Name: "empty vendor label", Args: &runtime.Unknown{Raw: []byte(`{"vendorMemoryLabels":[""]}`)}, WantErr: "vendorMemoryLabels must not hold an empty label"},
		{Name: "vendor labels as one string", Args: &runtime.Unknown{Raw: []byte(`{"vendorMemoryLabels":"nvidia.com/gpu.memory"}`)}, WantErr: "vendorMemoryLabels"},
		{
			Name: "YAML, the strategy",
			Args: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("scoringStrategy: best-fit\n")},
			Want: func() gpupolicy.Settings {
				s := gpupolicy.DefaultSettings()
				s.ScoringStrategy = gpupolicy.BestFit
				return s
			}(),
		},
		{
			Name: "the default strategy named",
			Args: &runtime.Unknown{Raw: []byte(`{"scoringStrategy":"prefer-larger"}`)},
			Want: gpupolicy.DefaultSettings(),
		},
		{Name: "unknown strategy", Args: &runtime.Unknown{Raw: []byte(`{"scoringStrategy":"bestfit"}`)}, WantErr: `scoringStrategy must be prefer-larger or best-fit, got "bestfit"`},
		{Name: "empty strategy", Args: &runtime.Unknown{Raw: []byte(`{"scoringStrategy":""}`)}, WantErr: `scoringStrategy must be prefer-larger or best-fit, got ""`},
		{Name: "strategy in the wrong case", Args: &runtime.Unknown{Raw: []byte(`{"scoringStrategy":"Best-Fit"}`)}, WantErr: `got "Best-Fit"`},
		{
			Name: "YAML, one field",
			Args: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("scoreScaleMiB: 40960\n")},
			Want: func() gpupolicy.Settings { s := gpupolicy.DefaultSettings(); s.ScoreScaleMiB = 40960; return s }(),
		},
		{Name: "unknown field", Args: &runtime.Unknown{Raw: []byte(`{"scoreScale":40960}`)}, WantErr: `unknown field "scoreScale"`},
		{Name: "field in the wrong case", Args: &runtime.Unknown{Raw: []byte(`{"ScoreScaleMiB":40960}`)}, WantErr: `unknown field "ScoreScaleMiB"`},
		{Name: "repeated field", Args: &runtime.Unknown{Raw: []byte(`{"scoreScaleMiB":1,"scoreScaleMiB":2}`)}, WantErr: `duplicate field "scoreScaleMiB"`},
		{Name: "empty label", Args: &runtime.Unknown{Raw: []byte(`{"nodeMemoryLabel":""}`)}, WantErr: "nodeMemoryLabel must not be empty"},
		{Name: "zero scale", Args: &runtime.Unknown{Raw: []byte(`{"scoreScaleMiB":0}`)}, WantErr: "scoreScaleMiB must be 1..1048576"},
		{Name: "scale too large", Args: &runtime.Unknown{Raw: []byte(`{"scoreScaleMiB":1048577}`)}, WantErr: "scoreScaleMiB must be 1..1048576"},
		{Name: "scale as a string", Args: &runtime.Unknown{Raw: []byte(`{"scoreScaleMiB":"80Gi"}`)}, WantErr: "scoreScaleMiB"},
		{Name: "not an object", Args: &runtime.Unknown{Raw: []byte(`[1]`)}, WantErr: "cannot unmarshal array"},
		{Name: "unsupported content type", Args: &runtime.Unknown{ContentType: "application/cbor", Raw: []byte{0xa0}}, WantErr: "unsupported content type"},
		{Name: "typed args of another plugin", Args: &v1.Pod{}, WantErr: "want *runtime.Unknown"},
	}
	plugintest.CheckArgs(t, Name, tests, func(args runtime.Object) (gpupolicy.Settings, error) {
		plugin, err := New(context.Background(), args, nil)
		if err != nil {
			return gpupolicy.Settings{}, err
		}
		return plugin.(*GPUScheduler).settings, nil
	})
}

// TestArgsReachTheRules checks configured keys are the ones Filter and Score read.
func TestArgsReachTheRules(t *testing.T) {
	pl := newPlugin(t, &runtime.Unknown{Raw: []byte(`{"minMemoryAnnotation":"example.org/vram","nodeMemoryLabel":"example.org/gpu-mib","scoreScaleMiB":40960}`)})
	pod := gpuPod("1", "-")
	pod.Annotations = map[string]string{"example.org/vram": "30000", gpupolicy.MinMemoryAnnotation: "90000"}
	node := gpuNode("custom", "-")
	node.Labels["example.org/gpu-mib"] = "32768"
	assertStatus(t, "Filter", pl.Filter(context.Background(), nil, pod, nodeInfo(node)), fwk.Success, "")
	node.Labels["example.org/gpu-mib"] = "24576"
	assertStatus(t, "Filter", pl.Filter(context.Background(), nil, pod, nodeInfo(node)), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonBelowMinimum)
	if score, _ := pl.Score(context.Background(), nil, pod, nodeInfo(node)); score != 60 {
		t.Fatalf("Score = %d, want 60 (24576 of a 40960 scale)", score)
	}
}

// TestBestFitArgReachesScore: with scoringStrategy best-fit the smallest sufficient
// GPU scores highest, where the default prefers the largest.
func TestBestFitArgReachesScore(t *testing.T) {
	pod := gpuPod("1", "16384")
	scores := func(pl *GPUScheduler) []int64 {
		var out []int64
		for _, memory := range []string{"16384", "22888", "81920", "144384"} {
			score, status := pl.Score(context.Background(), nil, pod, nodeInfo(gpuNode("n"+memory, memory)))
			if !status.IsSuccess() {
				t.Fatalf("Score: %v", status)
			}
			out = append(out, score)
		}
		return out
	}
	bestFit := scores(newPlugin(t, &runtime.Unknown{Raw: []byte(`{"scoringStrategy":"best-fit"}`)}))
	if want := []int64{100, 92, 55, 39}; !slices.Equal(bestFit, want) {
		t.Errorf("best-fit scores = %v, want %v", bestFit, want)
	}
	preferLarger := scores(newPlugin(t, nil))
	if want := []int64{20, 27, 100, 100}; !slices.Equal(preferLarger, want) {
		t.Errorf("prefer-larger scores = %v, want %v", preferLarger, want)
	}
}

func TestName(t *testing.T) {
	if got := newPlugin(t, nil).Name(); got != "GPUScheduler" {
		t.Fatalf("Name() = %q", got)
	}
}
