// Package gpuscheduler is the GPUScheduler plugin for the kube-scheduler framework:
// it keeps a pod off nodes whose per-GPU memory (read from the first GPU-memory label
// scheme the node carries, gpupolicy.ReadNodeMemory) is below the pod's declared
// minimum and scores the others by the configured strategy (larger GPUs first, or the
// smallest sufficient GPU first). The rules live in package gpupolicy; this package
// adapts them to the framework's extension points.
package gpuscheduler

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// Name is the plugin's name in the registry and in KubeSchedulerConfiguration profiles.
const Name = "GPUScheduler"

// stateKey is where PreFilter leaves the pod's requirement for Filter and Score.
const stateKey fwk.StateKey = "PreFilter" + Name

// requirementSignKey names the pod signature fragment this plugin contributes
// (the requirement it derives from the pod's annotation and GPU request).
const requirementSignKey = "v1.Pod.GPUSchedulerRequirement()"

// GPUScheduler filters and scores nodes by their GPU-memory label.
type GPUScheduler struct {
	settings gpupolicy.Settings
	// nodes holds each node's label read once per node update; nil without a
	// framework handle (then every call reads the label itself).
	nodes *nodeMemoryCache
}

var (
	_ fwk.PreFilterPlugin   = &GPUScheduler{}
	_ fwk.FilterPlugin      = &GPUScheduler{}
	_ fwk.ScorePlugin       = &GPUScheduler{}
	_ fwk.EnqueueExtensions = &GPUScheduler{}
	_ fwk.SignPlugin        = &GPUScheduler{}
)

// New builds the plugin from its pluginConfig args (nil for the defaults); see Args.
// With a handle that has an informer factory, it keeps the nodes' labels in a cache
// fed by the scheduler's Node informer (see nodeMemoryCache).
func New(ctx context.Context, args runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	settings, err := settingsFromArgs(args)
	if err != nil {
		return nil, err
	}
	pl := &GPUScheduler{settings: settings}
	if handle != nil && handle.SharedInformerFactory() != nil {
		pl.nodes = newNodeMemoryCache(settings)
		informer := handle.SharedInformerFactory().Core().V1().Nodes().Informer()
		if _, err := informer.AddEventHandler(pl.nodes.handlers()); err != nil {
			return nil, fmt.Errorf("%s: node label cache: %w", Name, err)
		}
	}
	klog.FromContext(ctx).V(2).Info("GPUScheduler configured",
		"minMemoryAnnotation", settings.MinMemoryAnnotation, "nodeMemoryLabel", settings.NodeMemoryLabel,
		"gpuResource", settings.GPUResource, "scoreScaleMiB", settings.ScoreScaleMiB,
		"scoringStrategy", settings.ScoringStrategy, "vendorMemoryLabels", settings.VendorMemoryLabels,
		"instanceTypesInGPUTable", len(settings.InstanceTypeGPUMemoryMiB), "nodeLabelCache", pl.nodes != nil)
	return pl, nil
}

// Name returns the plugin's name.
func (pl *GPUScheduler) Name() string { return Name }

// requirementState is the pod's requirement, or the policy error that makes the pod
// unschedulable everywhere, computed once per scheduling cycle.
type requirementState struct {
	req gpupolicy.Requirement
	err error
}

// Clone returns the state itself: it never changes after PreFilter.
func (s *requirementState) Clone() fwk.StateData { return s }

func (pl *GPUScheduler) compute(pod *v1.Pod) *requirementState {
	req, err := gpupolicy.FromPod(pod, pl.settings)
	return &requirementState{req: req, err: err}
}

// requirement reads what PreFilter stored, or computes it when PreFilter did not run
// (it is not enabled in the profile, or Filter/Score are called on their own).
func (pl *GPUScheduler) requirement(state fwk.CycleState, pod *v1.Pod) *requirementState {
	if state != nil {
		if data, err := state.Read(stateKey); err == nil {
			if s, ok := data.(*requirementState); ok {
				return s
			}
		}
	}
	return pl.compute(pod)
}

// PreFilter reads the pod's requirement once for the cycle. A pod that declares no
// minimum (and is valid) fits every node, so Filter is skipped for it. An invalid
// pod is not rejected here but by Filter on every node, so the scheduler reports the
// same message whether or not PreFilter is enabled.
func (pl *GPUScheduler) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	s := pl.compute(pod)
	state.Write(stateKey, s)
	if s.err == nil && s.req.MinMemoryMiB == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the requirement does not depend on other pods.
func (pl *GPUScheduler) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter rejects, as UnschedulableAndUnresolvable (preemption cannot change a label),
// a node whose GPU-memory label is missing, invalid or below the pod's minimum, and
// every node for a pod whose annotation is invalid or has no GPU request. The status
// message is the policy's reason. A missing node is an Error.
func (pl *GPUScheduler) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeOf(nodeInfo)
	if node == nil {
		return fwk.NewStatus(fwk.Error, gpupolicy.ReasonMissingNode)
	}
	s := pl.requirement(state, pod)
	if s.err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, s.err.Error())
	}
	if s.req.MinMemoryMiB == 0 {
		return nil // fits every node; the label is not read
	}
	if fits, reason := pl.nodeMemory(node).Fits(s.req); !fits {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return nil
}

// Score returns the policy's 0..100 score (already in the framework's range, so there
// is no NormalizeScore). A missing node or an invalid pod is an Error.
func (pl *GPUScheduler) Score(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	node := nodeOf(nodeInfo)
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, gpupolicy.ReasonMissingNode)
	}
	s := pl.requirement(state, pod)
	if s.err != nil {
		return 0, fwk.AsStatus(s.err)
	}
	if !s.req.HasGPU {
		return 0, nil // the label is not read
	}
	return pl.nodeMemory(node).Score100(s.req, pl.settings), nil
}

// nodeMemory is the node's label from the cache when it was read from this very
// object, else read now (what gpupolicy.FitsMemory does on every call).
func (pl *GPUScheduler) nodeMemory(node *v1.Node) gpupolicy.NodeMemory {
	if pl.nodes != nil {
		if memory, ok := pl.nodes.lookup(node); ok {
			return memory
		}
	}
	return gpupolicy.ReadNodeMemory(node, pl.settings)
}

// ScoreExtensions returns nil: scores need no normalisation.
func (pl *GPUScheduler) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod contributes the pod's requirement to its scheduling signature: pods with
// equal requirements get equal Filter and Score results on the same nodes, so the
// scheduler may batch them. An invalid pod is not signed.
func (pl *GPUScheduler) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	s := pl.compute(pod)
	if s.err != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, s.err.Error())
	}
	return []fwk.SignFragment{{Key: requirementSignKey, Value: s.req}}, nil
}

func nodeOf(nodeInfo fwk.NodeInfo) *v1.Node {
	if nodeInfo == nil {
		return nil
	}
	return nodeInfo.Node()
}
