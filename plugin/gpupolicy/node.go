package gpupolicy

import (
	"errors"

	v1 "k8s.io/api/core/v1"
)

// Reasons a node does not fit, or cannot be judged; each is also the text of the
// matching Err* value where there is one.
const (
	// ReasonMissingNode: there is no node to judge.
	ReasonMissingNode = "missing node"
	// ReasonInvalidNodeLabel: the node's memory label is absent or not a base-10
	// integer in 1..MaxGPUMemoryMiB.
	ReasonInvalidNodeLabel = "missing or invalid administrator GPU-memory label"
	// ReasonBelowMinimum: the node's memory label is below the pod's minimum.
	ReasonBelowMinimum = "GPU memory label is below the required minimum"
)

var (
	// ErrMissingNode is returned by NodeMemoryMiB for a nil node.
	ErrMissingNode = errors.New(ReasonMissingNode)
	// ErrInvalidNodeLabel is returned by NodeMemoryMiB for a bad or absent label.
	ErrInvalidNodeLabel = errors.New(ReasonInvalidNodeLabel)
)

// NodeMemoryMiB returns the node's per-GPU memory label in MiB.
func NodeMemoryMiB(node *v1.Node, s Settings) (int64, error) {
	if node == nil {
		return 0, ErrMissingNode
	}
	raw, ok := node.Labels[s.NodeMemoryLabel]
	if !ok {
		return 0, ErrInvalidNodeLabel
	}
	memory, ok := parseMiB(raw)
	if !ok {
		return 0, ErrInvalidNodeLabel
	}
	return memory, nil
}

// FitsMemory reports whether the node's memory label meets the pod's minimum and,
// if not, the reason. A pod without a minimum fits every node (the node is not
// read). Only the label is checked: GPU counts, taints and affinity stay with the
// scheduler's other filters.
func FitsMemory(req Requirement, node *v1.Node, s Settings) (bool, string) {
	if req.MinMemoryMiB == 0 {
		return true, ""
	}
	memory, err := NodeMemoryMiB(node, s)
	if err != nil {
		return false, err.Error()
	}
	if memory < req.MinMemoryMiB {
		return false, ReasonBelowMinimum
	}
	return true, ""
}

// Score100 returns 0..MaxScore: larger-memory GPUs score higher, linearly up to
// s.ScoreScaleMiB. It is 0 for pods without a GPU request and for nodes without a
// valid label.
func Score100(req Requirement, node *v1.Node, s Settings) int64 {
	if !req.HasGPU {
		return 0
	}
	memory, err := NodeMemoryMiB(node, s)
	if err != nil {
		return 0
	}
	return min(MaxScore, memory*MaxScore/s.ScoreScaleMiB)
}

// ExtenderScore returns Score100 in the extender API's range, 0..MaxExtenderScore.
func ExtenderScore(req Requirement, node *v1.Node, s Settings) int64 {
	return Score100(req, node, s) / (MaxScore / MaxExtenderScore)
}
