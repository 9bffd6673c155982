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
	// CapacityArgs are the annotation, the node label and the default choice, which
	// JobZone takes too (under names of its own) and applies alike.
	pluginargs.CapacityArgs
}

func settingsFromArgs(obj runtime.Object) (gpupolicy.CapacitySettings, error) {
	var args Args
	if err := pluginargs.Decode(obj, &args); err != nil {
		return gpupolicy.CapacitySettings{}, fmt.Errorf("%s args: %w", Name, err)
	}
	settings := args.Apply(gpupolicy.DefaultCapacitySettings())
	if err := settings.Validate(); err != nil {
		return gpupolicy.CapacitySettings{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return settings, nil
}
