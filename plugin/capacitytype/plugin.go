// Package capacitytype is the CapacityType plugin for the kube-scheduler framework:
// a pod that chooses on-demand or spot capacity (required or preferred) in its
// annotation is kept off nodes of the other type when the choice is required, scores
// nodes of the type it wants highest, and never lands on a node that is being taken
// away, whatever it tolerates. Pods without a choice are skipped. The rules live in
// package gpupolicy (CapacityChoiceFromPod, NodeCapacity); this package adapts them to
// the framework's extension points.
package capacitytype

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// Name is the plugin's name in the registry and in KubeSchedulerConfiguration profiles.
const Name = "CapacityType"

// stateKey is where PreFilter leaves the pod's choice for Filter, PreScore and Score.
const stateKey fwk.StateKey = "PreFilter" + Name

// choiceSignKey names the pod signature fragment this plugin contributes (the choice
// it derives from the pod's annotation and the default).
const choiceSignKey = "v1.Pod.CapacityTypeChoice()"

// CapacityType filters and scores nodes by their capacity type and disruption taints.
type CapacityType struct {
	settings gpupolicy.CapacitySettings
}

var (
	_ fwk.PreFilterPlugin   = &CapacityType{}
	_ fwk.FilterPlugin      = &CapacityType{}
	_ fwk.PreScorePlugin    = &CapacityType{}
	_ fwk.ScorePlugin       = &CapacityType{}
	_ fwk.EnqueueExtensions = &CapacityType{}
	_ fwk.SignPlugin        = &CapacityType{}
)

// New builds the plugin from its pluginConfig args (nil for the defaults); see Args.
func New(ctx context.Context, args runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	settings, err := settingsFromArgs(args)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("CapacityType configured",
		"annotation", settings.Annotation, "nodeLabel", settings.NodeLabel, "defaultChoice", settings.DefaultChoice)
	return &CapacityType{settings: settings}, nil
}

// Name returns the plugin's name.
func (pl *CapacityType) Name() string { return Name }

// choiceState is the pod's choice, or the policy error that makes the pod
// unschedulable everywhere, computed once per scheduling cycle.
type choiceState struct {
	choice gpupolicy.CapacityChoice
	err    error
}

// Clone returns the state itself: it never changes after PreFilter.
func (s *choiceState) Clone() fwk.StateData { return s }

// unjudged is true for a valid pod without a choice: this plugin passes it everywhere
// and scores it 0, so the framework may skip Filter and Score for it.
func (s *choiceState) unjudged() bool { return s.err == nil && s.choice == gpupolicy.NoChoice }

func (pl *CapacityType) compute(pod *v1.Pod) *choiceState {
	choice, err := gpupolicy.CapacityChoiceFromPod(pod, pl.settings)
	return &choiceState{choice: choice, err: err}
}

// choice reads what PreFilter stored, or computes it when PreFilter did not run.
func (pl *CapacityType) choice(state fwk.CycleState, pod *v1.Pod) *choiceState {
	if state != nil {
		if data, err := state.Read(stateKey); err == nil {
			if s, ok := data.(*choiceState); ok {
				return s
			}
		}
	}
	return pl.compute(pod)
}

// PreFilter reads the pod's choice once for the cycle and skips Filter for a pod
// without one. An invalid pod is rejected by Filter on every node, so the scheduler
// reports the policy's message whether or not PreFilter is enabled.
func (pl *CapacityType) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	s := pl.compute(pod)
	state.Write(stateKey, s)
	if s.unjudged() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the choice does not depend on other pods.
func (pl *CapacityType) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter rejects, as UnschedulableAndUnresolvable (preemption cannot change a node's
// capacity type or take back a disruption), a node being taken away, a node of the
// other type for a required choice, a node of unknown type for a required choice, and
// every node for a pod whose annotation is invalid. The status message is the
// policy's reason. A missing node is an Error.
func (pl *CapacityType) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeOf(nodeInfo)
	if node == nil {
		return fwk.NewStatus(fwk.Error, gpupolicy.ReasonMissingNode)
	}
	s := pl.choice(state, pod)
	if s.err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, s.err.Error())
	}
	if fits, reason := gpupolicy.FitsCapacityType(s.choice, node, pl.settings); !fits {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return nil
}

// PreScore skips Score for a pod without a choice (it would score 0 everywhere).
func (pl *CapacityType) PreScore(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if pl.choice(state, pod).unjudged() {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score returns the policy's 0..100 score (already in the framework's range, so there
// is no NormalizeScore): 100 on the type the pod wants, 0 on the other or an unknown
// one, half on a Cluster Autoscaler deletion candidate. A missing node or an invalid
// pod is an Error.
func (pl *CapacityType) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	node := nodeOf(nodeInfo)
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, gpupolicy.ReasonMissingNode)
	}
	s := pl.choice(state, pod)
	if s.err != nil {
		return 0, fwk.AsStatus(s.err)
	}
	return gpupolicy.CapacityScore100(s.choice, node, pl.settings), nil
}

// ScoreExtensions returns nil: scores need no normalisation.
func (pl *CapacityType) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod contributes the pod's choice to its scheduling signature: pods with equal
// choices get equal Filter and Score results on the same nodes, so the scheduler may
// batch them. An invalid pod is not signed.
func (pl *CapacityType) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	s := pl.compute(pod)
	if s.err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, s.err.Error())
	}
	return []fwk.SignFragment{{Key: choiceSignKey, Value: s.choice}}, nil
}

func nodeOf(nodeInfo fwk.NodeInfo) *v1.Node {
	if nodeInfo == nil {
		return nil
	}
	return nodeInfo.Node()
}
