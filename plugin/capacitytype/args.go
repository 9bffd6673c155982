package capacitytype

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
//	- name: CapacityType
//	  args:
//	    annotation: training.example.com/capacity-type
//	    nodeLabel: training.example.com/capacity-type
//	    defaultChoice: ""   # or on-demand, spot, prefer-on-demand, prefer-spot
//
// Unknown or repeated fields, empty keys and an unknown default choice stop the
// scheduler at start with an error naming the field.
type Args struct {
	// Annotation is the pod annotation holding the pod's choice.
	Annotation *string `json:"annotation,omitempty"`
	// NodeLabel is our node label with the node's capacity type, read before EKS's
	// and Karpenter's labels.
	NodeLabel *string `json:"nodeLabel,omitempty"`
	// DefaultChoice is the choice of a pod without the annotation ("" for none: such
	// pods are not judged).
	DefaultChoice *string `json:"defaultChoice,omitempty"`
}

func settingsFromArgs(obj runtime.Object) (gpupolicy.CapacitySettings, error) {
	var args Args
	if err := pluginargs.Decode(obj, &args); err != nil {
		return gpupolicy.CapacitySettings{}, fmt.Errorf("%s args: %w", Name, err)
	}
	settings := gpupolicy.DefaultCapacitySettings()
	if args.Annotation != nil {
		settings.Annotation = *args.Annotation
	}
	if args.NodeLabel != nil {
		settings.NodeLabel = *args.NodeLabel
	}
	if args.DefaultChoice != nil {
		settings.DefaultChoice = gpupolicy.CapacityChoice(*args.DefaultChoice)
	}
	if err := settings.Validate(); err != nil {
		return gpupolicy.CapacitySettings{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return settings, nil
}
