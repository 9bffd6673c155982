package gpuscheduler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/pluginargs"
)

// Args are the plugin's optional pluginConfig args in a KubeSchedulerConfiguration
// profile; an omitted field keeps the policy default:
//
//	pluginConfig:
//	- name: GPUScheduler
//	  args:
//	    minMemoryAnnotation: training.example.com/min-gpu-memory-mib
//	    nodeMemoryLabel: training.example.com/gpu-memory-mib
//	    gpuResource: nvidia.com/gpu
//	    scoreScaleMiB: 81920
//	    scoringStrategy: prefer-larger
//	    vendorMemoryLabels:
//	    - karpenter.k8s.aws/instance-gpu-memory
//	    - eks.amazonaws.com/instance-gpu-memory
//	    - nvidia.com/gpu.memory
//	    instanceTypeGPUMemoryMiB: {}    # the stack renders EC2's GPU types, e.g. g5.xlarge: 22888
//
// Unknown or repeated fields, empty strings, an out-of-range scale or table entry
// and an unknown strategy stop the scheduler at start with an error naming the field.
type Args struct {
	// MemoryArgs are the fields JobZone takes too: the annotation, the label, the
	// resource and where a node's per-GPU memory is read.
	pluginargs.MemoryArgs
	// ScoreScaleMiB is the score's scale (1..1048576): the label that scores 100
	// under prefer-larger, the spare MiB per GPU that scores 50 under best-fit.
	ScoreScaleMiB *int64 `json:"scoreScaleMiB,omitempty"`
	// ScoringStrategy is prefer-larger (the default) or best-fit.
	ScoringStrategy *string `json:"scoringStrategy,omitempty"`
}

// settingsFromArgs turns what the framework passes New into validated settings: nil
// (no pluginConfig entry) or the raw args of a profile (*runtime.Unknown, JSON or YAML).
func settingsFromArgs(obj runtime.Object) (gpupolicy.Settings, error) {
	var args Args
	if err := pluginargs.Decode(obj, &args); err != nil {
		return gpupolicy.Settings{}, fmt.Errorf("%s args: %w", Name, err)
	}
	settings := args.apply(gpupolicy.DefaultSettings())
	if err := settings.Validate(); err != nil {
		return gpupolicy.Settings{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return settings, nil
}

func (a Args) apply(s gpupolicy.Settings) gpupolicy.Settings {
	s = a.MemoryArgs.Apply(s)
	if a.ScoreScaleMiB != nil {
		s.ScoreScaleMiB = *a.ScoreScaleMiB
	}
	if a.ScoringStrategy != nil {
		s.ScoringStrategy = *a.ScoringStrategy
	}
	return s
}
