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

// NodeMemory is a node's memory label as read once: the MiB per GPU, or the reason
// the node cannot be judged. It lets a caller read a node's label once per node
// update instead of once per pod and verb (see ReadNodeMemory).
type NodeMemory struct {
	// MiB is the label's value; meaningful only when Reason is empty.
	MiB int64
	// Reason is "" for a valid label, else ReasonMissingNode or ReasonInvalidNodeLabel.
	Reason string
}

// ReadNodeMemory reads the node's label into a NodeMemory (NodeMemoryMiB's answer).
func ReadNodeMemory(node *v1.Node, s Settings) NodeMemory {
	memory, err := NodeMemoryMiB(node, s)
	if err != nil {
		return NodeMemory{Reason: err.Error()}
	}
	return NodeMemory{MiB: memory}
}

// FitsMemory reports whether the node's memory label meets the pod's minimum and,
// if not, the reason. A pod without a minimum fits every node (the node is not
// read). Only the label is checked: GPU counts, taints and affinity stay with the
// scheduler's other filters.
func FitsMemory(req Requirement, node *v1.Node, s Settings) (bool, string) {
	if req.MinMemoryMiB == 0 {
		return true, ""
	}
	return ReadNodeMemory(node, s).Fits(req)
}

// Fits is FitsMemory on a label already read.
func (m NodeMemory) Fits(req Requirement) (bool, string) {
	switch {
	case req.MinMemoryMiB == 0:
		return true, ""
	case m.Reason != "":
		return false, m.Reason
	case m.MiB < req.MinMemoryMiB:
		return false, ReasonBelowMinimum
	}
	return true, ""
}

// Score100 returns 0..MaxScore by s.ScoringStrategy (see NodeMemory.Score100). It is
// 0 for pods without a GPU request (the node is not read) and for nodes without a
// valid label.
func Score100(req Requirement, node *v1.Node, s Settings) int64 {
	if !req.HasGPU {
		return 0
	}
	return ReadNodeMemory(node, s).Score100(req, s)
}

// Score100 is the score on a label already read, 0..MaxScore; 0 for a pod without a
// GPU request and a node without a valid label. With scale = s.ScoreScaleMiB:
//
//   - PreferLarger: min(MaxScore, label*MaxScore/scale), larger GPUs score higher;
//   - BestFit: MaxScore*scale/(scale+spare), spare = label - the pod's minimum (0 when
//     it declares none): an exact fit scores MaxScore, scale MiB to spare half, more
//     spare less; 0 for a label below the minimum.
//
// Integer division of non-negative values, as the Python policy's // computes it.
func (m NodeMemory) Score100(req Requirement, s Settings) int64 {
	if !req.HasGPU || m.Reason != "" {
		return 0
	}
	scale := s.ScoreScaleMiB
	if s.ScoringStrategy == BestFit {
		spare := m.MiB - req.MinMemoryMiB
		if spare < 0 {
			return 0
		}
		return MaxScore * scale / (scale + spare)
	}
	return min(MaxScore, m.MiB*MaxScore/scale)
}

// ExtenderScore returns Score100 in the extender API's range, 0..MaxExtenderScore.
func ExtenderScore(req Requirement, node *v1.Node, s Settings) int64 {
	return Score100(req, node, s) / (MaxScore / MaxExtenderScore)
}
