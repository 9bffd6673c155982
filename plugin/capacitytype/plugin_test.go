package capacitytype

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/plugintest"
)

// newPlugin builds the plugin through its factory, as the scheduler does.
func newPlugin(t *testing.T, args runtime.Object) *CapacityType {
	t.Helper()
	plugin, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return plugin.(*CapacityType)
}

// choosingPod returns a pending pod whose annotation is choice, or without it when
// choice is "-"; tolerating every taint when tolerateAll.
func choosingPod(choice string, tolerateAll bool) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-train"}}
	pod.Spec.Containers = []v1.Container{{Name: "train", Image: "busybox:1.37.0"}}
	if choice != "-" {
		pod.Annotations = map[string]string{gpupolicy.CapacityTypeAnnotation: choice}
	}
	if tolerateAll {
		pod.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	}
	return pod
}

// capacityNode returns a node labelled key=value (no label when key is ""), with
// taints of the given keys (NoSchedule).
func capacityNode(key, value string, taints ...string) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}}
	if key != "" {
		node.Labels[key] = value
	}
	for _, taint := range taints {
		node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: taint, Effect: v1.TaintEffectNoSchedule})
	}
	return node
}

func nodeInfo(node *v1.Node) *framework.NodeInfo {
	info := framework.NewNodeInfo()
	info.SetNode(node)
	return info
}

func TestFilter(t *testing.T) {
	ours, eks, karpenter := gpupolicy.CapacityTypeLabel, gpupolicy.EKSCapacityTypeLabel, gpupolicy.KarpenterCapacityTypeLabel
	tests := []struct {
		name   string
		pod    *v1.Pod
		node   *v1.Node
		code   fwk.Code
		reason string
	}{
		{"on-demand on on-demand", choosingPod("on-demand", false), capacityNode(ours, "on-demand"), fwk.Success, ""},
		{"on-demand on EKS spot", choosingPod("on-demand", false), capacityNode(eks, "SPOT"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNotOnDemand},
		{"on-demand on a capacity block", choosingPod("on-demand", false), capacityNode(eks, "CAPACITY_BLOCK"), fwk.Success, ""},
		{"spot on Karpenter on-demand", choosingPod("spot", false), capacityNode(karpenter, "on-demand"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNotSpot},
		{"spot on an unlabelled node", choosingPod("spot", false), capacityNode("", ""), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonUnknownCapacityType},
		{"prefer-spot on on-demand", choosingPod("prefer-spot", false), capacityNode(ours, "on-demand"), fwk.Success, ""},
		{"tolerate-all pod on a disrupted node", choosingPod("on-demand", true), capacityNode(ours, "on-demand", "karpenter.sh/disrupted"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNodeBeingRemoved},
		{"prefer-on-demand on a node Cluster Autoscaler deletes", choosingPod("prefer-on-demand", false), capacityNode(ours, "on-demand", "ToBeDeletedByClusterAutoscaler"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNodeBeingRemoved},
		{"no choice on a disrupted node: not this plugin's business", choosingPod("-", true), capacityNode(ours, "spot", "karpenter.sh/disrupted"), fwk.Success, ""},
		{"invalid annotation", choosingPod("SPOT", false), capacityNode(ours, "spot"), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonInvalidCapacityChoice},
	}
	pl := newPlugin(t, nil)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertStatus(t, "Filter alone", pl.Filter(ctx, framework.NewCycleState(), tt.pod, nodeInfo(tt.node)), tt.code, tt.reason)
			state := framework.NewCycleState()
			_, pre := pl.PreFilter(ctx, state, tt.pod, nil)
			if pre.IsSkip() {
				if tt.code != fwk.Success {
					t.Fatalf("PreFilter skipped Filter for a pod Filter rejects")
				}
				return
			}
			if !pre.IsSuccess() {
				t.Fatalf("PreFilter = %v, want success or skip", pre)
			}
			assertStatus(t, "Filter after PreFilter", pl.Filter(ctx, state, tt.pod, nodeInfo(tt.node)), tt.code, tt.reason)
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

func TestMissingNodeIsAnError(t *testing.T) {
	pl := newPlugin(t, nil)
	pod := choosingPod("spot", false)
	for name, info := range map[string]fwk.NodeInfo{
		"nil NodeInfo":            nil,
		"NodeInfo without a node": framework.NewNodeInfo(),
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

func TestPreFilterAndPreScoreSkipPodsWithoutAChoice(t *testing.T) {
	tests := []struct {
		name string
		args runtime.Object
		pod  *v1.Pod
		skip bool
	}{
		{"no annotation, no default: skipped", nil, choosingPod("-", false), true},
		{"a choice: runs", nil, choosingPod("prefer-spot", false), false},
		{"invalid: runs (and Filter rejects)", nil, choosingPod("Spot", false), false},
		{"no annotation but a default: runs", &runtime.Unknown{Raw: []byte(`{"defaultChoice":"on-demand"}`)}, choosingPod("-", false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, tt.args)
			state := framework.NewCycleState()
			result, status := pl.PreFilter(context.Background(), state, tt.pod, nil)
			if result != nil {
				t.Errorf("PreFilterResult = %v, want nil (all nodes)", result)
			}
			if status.IsSkip() != tt.skip || (!tt.skip && !status.IsSuccess()) {
				t.Fatalf("PreFilter = %v, want skip=%v", status, tt.skip)
			}
			if _, err := state.Read(stateKey); err != nil {
				t.Fatalf("PreFilter left no state: %v", err)
			}
			if pre := pl.PreScore(context.Background(), state, tt.pod, nil); pre.IsSkip() != tt.skip {
				t.Fatalf("PreScore = %v, want skip=%v", pre, tt.skip)
			}
		})
	}
	if newPlugin(t, nil).PreFilterExtensions() != nil {
		t.Error("PreFilterExtensions must be nil")
	}
}

// TestFilterReadsPreFilterState proves the cycle state is used: a state written for a
// pod requiring spot makes Filter reject an on-demand node for a pod with no choice.
func TestFilterReadsPreFilterState(t *testing.T) {
	pl := newPlugin(t, nil)
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(context.Background(), state, choosingPod("spot", false), nil); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	node := nodeInfo(capacityNode(gpupolicy.CapacityTypeLabel, "on-demand"))
	assertStatus(t, "Filter", pl.Filter(context.Background(), state, choosingPod("-", false), node), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNotSpot)
	assertStatus(t, "Filter on a cloned state", pl.Filter(context.Background(), state.Clone(), choosingPod("-", false), node), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNotSpot)
}

func TestScore(t *testing.T) {
	ours := gpupolicy.CapacityTypeLabel
	tests := []struct {
		name  string
		pod   *v1.Pod
		node  *v1.Node
		score int64
	}{
		{"prefer-spot on spot", choosingPod("prefer-spot", false), capacityNode(ours, "spot"), 100},
		{"prefer-spot on on-demand", choosingPod("prefer-spot", false), capacityNode(ours, "on-demand"), 0},
		{"prefer-on-demand on reserved", choosingPod("prefer-on-demand", false), capacityNode(ours, "reserved"), 100},
		{"on-demand on a deletion candidate", choosingPod("on-demand", false), capacityNode(ours, "on-demand", gpupolicy.DeletionCandidateTaint), 50},
		{"no choice", choosingPod("-", false), capacityNode(ours, "spot"), 0},
	}
	pl := newPlugin(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score, status := pl.Score(context.Background(), framework.NewCycleState(), tt.pod, nodeInfo(tt.node))
			if !status.IsSuccess() || score != tt.score {
				t.Fatalf("Score = %d, %v; want %d", score, status, tt.score)
			}
		})
	}
	if pl.ScoreExtensions() != nil {
		t.Error("ScoreExtensions must be nil")
	}
	score, status := pl.Score(context.Background(), nil, choosingPod("x", false), nodeInfo(capacityNode(ours, "spot")))
	if score != 0 {
		t.Errorf("invalid pod: score %d, want 0", score)
	}
	assertStatus(t, "Score of an invalid pod", status, fwk.Error, gpupolicy.ReasonInvalidCapacityChoice)
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
	other := choosingPod("spot", false)
	other.Name, other.UID = "other", "uid-other"
	other.Spec.Containers[0].Image = "cuda:12"
	if sign(choosingPod("spot", false)) != sign(other) {
		t.Error("pods with the same choice must sign the same")
	}
	for _, pair := range [][2]string{{"spot", "prefer-spot"}, {"spot", "on-demand"}, {"-", "prefer-on-demand"}} {
		if sign(choosingPod(pair[0], false)) == sign(choosingPod(pair[1], false)) {
			t.Errorf("%q and %q must sign differently", pair[0], pair[1])
		}
	}
	if _, status := pl.SignPod(context.Background(), choosingPod("Spot", false)); status.Code() != fwk.Unschedulable {
		t.Errorf("an invalid pod must not be signed, got %v", status)
	}
}

func TestArgs(t *testing.T) {
	withDefault := gpupolicy.DefaultCapacitySettings()
	withDefault.DefaultChoice = gpupolicy.PreferOnDemand
	tests := []plugintest.ArgsCase[gpupolicy.CapacitySettings]{
		{Name: "nil Args: defaults", Want: gpupolicy.DefaultCapacitySettings()},
		{Name: "empty object: defaults", Args: &runtime.Unknown{Raw: []byte(`{}`)}, Want: gpupolicy.DefaultCapacitySettings()},
		{Name: "YAML default choice", Args: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("defaultChoice: prefer-on-demand\n")}, Want: withDefault},
		{
			Name: "every field",
			Args: &runtime.Unknown{Raw: []byte(`{"annotation":"example.org/capacity","nodeLabel":"example.org/lifecycle","defaultChoice":"spot"}`)},
			Want: gpupolicy.CapacitySettings{Annotation: "example.org/capacity", NodeLabel: "example.org/lifecycle", DefaultChoice: gpupolicy.RequireSpot},
		},
		{Name: "empty default: none", Args: &runtime.Unknown{Raw: []byte(`{"defaultChoice":""}`)}, Want: gpupolicy.DefaultCapacitySettings()},
		{Name: "unknown default", Args: &runtime.Unknown{Raw: []byte(`{"defaultChoice":"SPOT"}`)}, WantErr: `defaultChoice must be empty, on-demand, spot, prefer-on-demand or prefer-spot, got "SPOT"`},
		{Name: "empty label", Args: &runtime.Unknown{Raw: []byte(`{"nodeLabel":""}`)}, WantErr: "nodeLabel must not be empty"},
		{Name: "unknown field", Args: &runtime.Unknown{Raw: []byte(`{"default":"spot"}`)}, WantErr: `unknown field "default"`},
		{Name: "typed args of another plugin", Args: &v1.Pod{}, WantErr: "want *runtime.Unknown"},
	}
	plugintest.CheckArgs(t, Name, tests, func(args runtime.Object) (gpupolicy.CapacitySettings, error) {
		plugin, err := New(context.Background(), args, nil)
		if err != nil {
			return gpupolicy.CapacitySettings{}, err
		}
		return plugin.(*CapacityType).settings, nil
	})
}

// TestArgsReachTheRules: the configured annotation and label are the ones Filter reads,
// and the default choice applies to a pod without the annotation.
func TestArgsReachTheRules(t *testing.T) {
	pl := newPlugin(t, &runtime.Unknown{Raw: []byte(`{"annotation":"example.org/capacity","nodeLabel":"example.org/lifecycle","defaultChoice":"on-demand"}`)})
	pod := choosingPod("-", false)
	pod.Annotations = map[string]string{"example.org/capacity": "spot", gpupolicy.CapacityTypeAnnotation: "on-demand"}
	spot := capacityNode("example.org/lifecycle", "spot")
	spot.Labels[gpupolicy.CapacityTypeLabel] = "on-demand"
	assertStatus(t, "Filter", pl.Filter(context.Background(), nil, pod, nodeInfo(spot)), fwk.Success, "")
	assertStatus(t, "Filter of the default", pl.Filter(context.Background(), nil, choosingPod("-", false), nodeInfo(spot)), fwk.UnschedulableAndUnresolvable, gpupolicy.ReasonNotOnDemand)
}

func TestName(t *testing.T) {
	if got := newPlugin(t, nil).Name(); got != "CapacityType" {
		t.Fatalf("Name() = %q", got)
	}
}
