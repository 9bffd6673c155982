package pluginargs

import (
	v1 "k8s.io/api/core/v1"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// MemoryArgs are where a plugin reads a pod's GPU-memory minimum and a node's per-GPU
// memory. GPUScheduler and JobZone embed them, so both take the same fields under the
// same names, and the stack renders the same values into both; an omitted field keeps
// the policy default.
type MemoryArgs struct {
	// MinMemoryAnnotation is the pod annotation with the minimum per-GPU memory in MiB.
	MinMemoryAnnotation *string `json:"minMemoryAnnotation,omitempty"`
	// NodeMemoryLabel is the node label with the per-GPU memory in MiB.
	NodeMemoryLabel *string `json:"nodeMemoryLabel,omitempty"`
	// GPUResource is the extended resource that makes a pod a GPU pod.
	GPUResource *string `json:"gpuResource,omitempty"`
	// VendorMemoryLabels are the per-GPU MiB labels read, in order, on a node
	// without nodeMemoryLabel; omitted: Karpenter's, EKS Auto Mode's and GPU feature
	// discovery's; [] reads none.
	VendorMemoryLabels *[]string `json:"vendorMemoryLabels,omitempty"`
	// InstanceTypeGPUMemoryMiB maps instance types to MiB per GPU, for a node with
	// none of those labels but node.kubernetes.io/instance-type; omitted: empty.
	InstanceTypeGPUMemoryMiB map[string]int64 `json:"instanceTypeGPUMemoryMiB,omitempty"`
}

// Apply returns s with every field the args set replaced.
func (a MemoryArgs) Apply(s gpupolicy.Settings) gpupolicy.Settings {
	set(&s.MinMemoryAnnotation, a.MinMemoryAnnotation)
	set(&s.NodeMemoryLabel, a.NodeMemoryLabel)
	if a.GPUResource != nil {
		s.GPUResource = v1.ResourceName(*a.GPUResource)
	}
	if a.VendorMemoryLabels != nil {
		s.VendorMemoryLabels = *a.VendorMemoryLabels
	}
	if a.InstanceTypeGPUMemoryMiB != nil {
		s.InstanceTypeGPUMemoryMiB = a.InstanceTypeGPUMemoryMiB
	}
	return s
}

// CapacityArgs are the capacity-type rule's keys and default choice. CapacityType embeds
// them (annotation, nodeLabel, defaultChoice); JobZone takes the same three under
// names of its own (capacityTypeAnnotation, capacityTypeNodeLabel,
// defaultCapacityChoice) and applies them through this type, so both read them alike.
type CapacityArgs struct {
	// Annotation is the pod annotation holding the pod's choice.
	Annotation *string `json:"annotation,omitempty"`
	// NodeLabel is our node label with the node's capacity type, read before EKS's
	// and Karpenter's labels.
	NodeLabel *string `json:"nodeLabel,omitempty"`
	// DefaultChoice is the choice of a pod without the annotation ("" for none: such
	// pods are not judged).
	DefaultChoice *string `json:"defaultChoice,omitempty"`
}

// Apply returns s with every field the args set replaced.
func (a CapacityArgs) Apply(s gpupolicy.CapacitySettings) gpupolicy.CapacitySettings {
	set(&s.Annotation, a.Annotation)
	set(&s.NodeLabel, a.NodeLabel)
	if a.DefaultChoice != nil {
		s.DefaultChoice = gpupolicy.CapacityChoice(*a.DefaultChoice)
	}
	return s
}

func set(field *string, value *string) {
	if value != nil {
		*field = *value
	}
}
