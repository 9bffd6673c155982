// Package gpupolicy holds the GPU-memory scheduling rules: what a pod requires of a
// GPU node, whether the node's per-GPU memory (read from the first GPU-memory label
// scheme it carries, ReadNodeMemory) meets it, and how much the pod prefers the node. It is the Go twin of the project's Python policy package; both
// are held to the shared vectors in tests/vectors. It does no I/O and knows nothing
// of the scheduler framework.
package gpupolicy

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
)

const (
	// MinMemoryAnnotation is the pod annotation holding the minimum memory, in MiB,
	// that each GPU of the pod needs.
	MinMemoryAnnotation = "training.example.com/min-gpu-memory-mib"
	// NodeMemoryLabel is the node label holding the memory, in MiB, of each eligible
	// GPU on a homogeneous, non-shared GPU node (not the total, not free VRAM).
	NodeMemoryLabel = "training.example.com/gpu-memory-mib"
	// KarpenterGPUMemoryLabel is Karpenter's (AWS provider) node label: MiB per GPU,
	// from EC2 GpuInfo.Gpus[0].MemoryInfo.SizeInMiB, set only for instance types
	// with exactly one GPU device entry.
	KarpenterGPUMemoryLabel = "karpenter.k8s.aws/instance-gpu-memory"
	// EKSAutoGPUMemoryLabel is EKS Auto Mode's node label: MiB per GPU.
	EKSAutoGPUMemoryLabel = "eks.amazonaws.com/instance-gpu-memory"
	// GFDGPUMemoryLabel is NVIDIA GPU feature discovery's node label: MiB per GPU
	// as NVML reports it (under the MIG "single" strategy, one MIG slice's memory).
	GFDGPUMemoryLabel = "nvidia.com/gpu.memory"
	// InstanceTypeLabel is the well-known node label naming the EC2 instance type,
	// read last, through Settings.InstanceTypeGPUMemoryMiB.
	InstanceTypeLabel = "node.kubernetes.io/instance-type"
	// GPUResource is the extended resource whose aggregated request makes a pod a GPU pod.
	GPUResource v1.ResourceName = "nvidia.com/gpu"
	// ScoreScaleMiB is the label value, in MiB, at and above which a node scores the
	// maximum (80 GiB: a chosen scale, not a hardware maximum).
	ScoreScaleMiB int64 = 80 * 1024
	// MaxGPUMemoryMiB is the largest value the annotation and the label may hold
	// (1 TiB); the smallest is 1.
	MaxGPUMemoryMiB int64 = 1024 * 1024
	// MaxScore is the largest Score100 result (the framework's MaxNodeScore).
	MaxScore int64 = 100
	// MaxExtenderScore is the largest ExtenderScore result (the extender API's
	// MaxExtenderPriority).
	MaxExtenderScore int64 = 10
)

// Scoring strategies, the values of Settings.ScoringStrategy.
const (
	// PreferLarger scores by the label: larger GPUs score higher, linearly up to
	// Settings.ScoreScaleMiB.
	PreferLarger = "prefer-larger"
	// BestFit scores by the memory a pod leaves unused: the smallest sufficient GPU
	// scores highest, so large GPUs stay free for large pods.
	BestFit = "best-fit"
	// ScoringStrategy is the default strategy.
	ScoringStrategy = PreferLarger
)

// VendorMemoryLabels returns the default vendor labels, in the order they are read
// after NodeMemoryLabel: Karpenter's, EKS Auto Mode's, GPU feature discovery's.
func VendorMemoryLabels() []string {
	return []string{KarpenterGPUMemoryLabel, EKSAutoGPUMemoryLabel, GFDGPUMemoryLabel}
}

// Settings are the keys, the scale and the scoring strategy the policy reads. The zero value is not
// valid: start from DefaultSettings, and pass the functions of this package only
// settings that Validate accepts (ScoreScaleMiB divides).
type Settings struct {
	// MinMemoryAnnotation is the pod annotation key of the minimum per-GPU memory.
	MinMemoryAnnotation string
	// NodeMemoryLabel is the node label key of the per-GPU memory.
	NodeMemoryLabel string
	// GPUResource is the extended resource that counts as a GPU request.
	GPUResource v1.ResourceName
	// ScoreScaleMiB is the score's scale, 1..MaxGPUMemoryMiB: under PreferLarger the
	// label that scores MaxScore, under BestFit the spare MiB per GPU that scores half.
	ScoreScaleMiB int64
	// ScoringStrategy is PreferLarger or BestFit.
	ScoringStrategy string
	// VendorMemoryLabels are the per-GPU MiB labels read, in order, on a node
	// without NodeMemoryLabel (see ReadNodeMemory).
	VendorMemoryLabels []string
	// InstanceTypeGPUMemoryMiB maps an instance type to its MiB per GPU, for a node
	// with none of the labels above but an InstanceTypeLabel; a type missing here is
	// a reason, never a guess.
	InstanceTypeGPUMemoryMiB map[string]int64
}

// DefaultSettings returns the settings with every field at its documented default.
func DefaultSettings() Settings {
	return Settings{
		MinMemoryAnnotation: MinMemoryAnnotation,
		NodeMemoryLabel:     NodeMemoryLabel,
		GPUResource:         GPUResource,
		ScoreScaleMiB:       ScoreScaleMiB,
		ScoringStrategy:     ScoringStrategy,
		VendorMemoryLabels:  VendorMemoryLabels(),
	}
}

// Validate reports every field that is empty or out of range.
func (s Settings) Validate() error {
	var errs []error
	if s.MinMemoryAnnotation == "" {
		errs = append(errs, errors.New("minMemoryAnnotation must not be empty"))
	}
	if s.NodeMemoryLabel == "" {
		errs = append(errs, errors.New("nodeMemoryLabel must not be empty"))
	}
	if s.NodeMemoryLabel == InstanceTypeLabel {
		errs = append(errs, fmt.Errorf("nodeMemoryLabel must not be %s", InstanceTypeLabel))
	}
	for _, label := range s.VendorMemoryLabels {
		switch label {
		case "":
			errs = append(errs, errors.New("vendorMemoryLabels must not hold an empty label"))
		case InstanceTypeLabel:
			errs = append(errs, fmt.Errorf("vendorMemoryLabels must not hold %s (it is read last, through instanceTypeGPUMemoryMiB)", InstanceTypeLabel))
		}
	}
	for _, instanceType := range slices.Sorted(maps.Keys(s.InstanceTypeGPUMemoryMiB)) {
		if instanceType == "" {
			errs = append(errs, errors.New("instanceTypeGPUMemoryMiB must not have an empty instance type"))
		}
		if mib := s.InstanceTypeGPUMemoryMiB[instanceType]; mib < 1 || mib > MaxGPUMemoryMiB {
			errs = append(errs, fmt.Errorf("instanceTypeGPUMemoryMiB[%q] must be 1..%d, got %d", instanceType, MaxGPUMemoryMiB, mib))
		}
	}
	if s.GPUResource == "" {
		errs = append(errs, errors.New("gpuResource must not be empty"))
	}
	if s.ScoreScaleMiB < 1 || s.ScoreScaleMiB > MaxGPUMemoryMiB {
		errs = append(errs, fmt.Errorf("scoreScaleMiB must be 1..%d, got %d", MaxGPUMemoryMiB, s.ScoreScaleMiB))
	}
	switch s.ScoringStrategy {
	case PreferLarger, BestFit:
	default:
		errs = append(errs, fmt.Errorf("scoringStrategy must be %s or %s, got %q", PreferLarger, BestFit, s.ScoringStrategy))
	}
	return errors.Join(errs...)
}
