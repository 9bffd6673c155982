package gpupolicy

import (
	"errors"
	"strconv"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Reasons FromPod fails with; each is also the text of the matching Err* value.
const (
	// ReasonMissingPod: there is no pod to judge.
	ReasonMissingPod = "missing pod"
	// ReasonInvalidMinMemory: the annotation is not a base-10 integer in 1..MaxGPUMemoryMiB.
	ReasonInvalidMinMemory = "minimum GPU memory must be 1..1048576 MiB"
	// ReasonRequiresGPURequest: the annotation is on a pod whose aggregated GPU request
	// is not positive.
	ReasonRequiresGPURequest = "minimum GPU memory requires a positive GPU request"
)

var (
	// ErrMissingPod is returned by FromPod for a nil pod.
	ErrMissingPod = errors.New(ReasonMissingPod)
	// ErrInvalidMinMemory is returned by FromPod for an invalid annotation.
	ErrInvalidMinMemory = errors.New(ReasonInvalidMinMemory)
	// ErrRequiresGPURequest is returned by FromPod for a minimum without a GPU request.
	ErrRequiresGPURequest = errors.New(ReasonRequiresGPURequest)
)

// Requirement is what a pod asks of a GPU node. MinMemoryMiB 0 means the pod
// declares no minimum (and then fits every node as far as this policy goes).
type Requirement struct {
	// HasGPU is true when the pod's aggregated GPU request is positive.
	HasGPU bool
	// MinMemoryMiB is the declared minimum per-GPU memory, or 0.
	MinMemoryMiB int64
}

// FromPod reads the requirement of a pod as the API server serves it (requests
// already defaulted from limits). The GPU request is aggregated by
// k8s.io/component-helpers/resource.PodRequests with default options, exactly as the
// scheduler's own resource fit does. The annotation is parsed first, so a malformed
// annotation is reported even on a pod without GPUs.
func FromPod(pod *v1.Pod, s Settings) (Requirement, error) {
	if pod == nil {
		return Requirement{}, ErrMissingPod
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	gpus := requests[s.GPUResource]
	req := Requirement{HasGPU: gpus.Sign() > 0}

	raw, declared := pod.Annotations[s.MinMemoryAnnotation]
	if !declared {
		return req, nil
	}
	minimum, ok := parseMiB(raw)
	if !ok {
		return Requirement{}, ErrInvalidMinMemory
	}
	if !req.HasGPU {
		return Requirement{}, ErrRequiresGPURequest
	}
	req.MinMemoryMiB = minimum
	return req, nil
}

// parseMiB reads an annotation or label value: strconv.ParseInt base 10 (an optional
// sign, ASCII digits, nothing else), then the range 1..MaxGPUMemoryMiB.
func parseMiB(raw string) (int64, bool) {
	value, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || value < 1 || value > MaxGPUMemoryMiB {
		return 0, false
	}
	return value, true
}
