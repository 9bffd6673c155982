package gpupolicy

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Reasons a node does not fit, or cannot be judged; each is also the text of the
// matching Err* value where there is one.
const (
	// ReasonMissingNode: there is no node to judge.
	ReasonMissingNode = "missing node"
	// ReasonInvalidNodeLabel: the node carries none of the GPU-memory schemes' labels.
	ReasonInvalidNodeLabel = "missing or invalid administrator GPU-memory label"
	// ReasonInvalidMemoryLabelFormat, formatted with the label's key: the first
	// scheme label the node carries is not a base-10 integer in 1..MaxGPUMemoryMiB.
	ReasonInvalidMemoryLabelFormat = "invalid GPU-memory label %s (not 1..1048576 MiB)"
	// ReasonUnknownInstanceTypeFormat, formatted with the instance type: the node
	// is judged by its instance type, which Settings.InstanceTypeGPUMemoryMiB lacks.
	ReasonUnknownInstanceTypeFormat = "instance type %s is not in the GPU table"
	// ReasonBelowMinimum: the node's memory label is below the pod's minimum.
	ReasonBelowMinimum = "GPU memory label is below the required minimum"
)

// NodeMemory is a node's memory as read once: the MiB per GPU, or the reason the
// node cannot be judged. It lets a caller read a node's labels once per node update
// instead of once per pod and verb (see ReadNodeMemory).
type NodeMemory struct {
	// MiB is the memory per GPU; meaningful only when Reason is empty.
	MiB int64
	// Reason is "" for a valid reading, else why the node cannot be judged.
	Reason string
}

// ReadNodeMemory reads the node's per-GPU memory from the first of these labels
// it carries; the first present decides, even when its value is invalid:
//
//  1. s.NodeMemoryLabel (ours): MiB per GPU;
//  2. each of s.VendorMemoryLabels in order (Karpenter's, EKS Auto Mode's, GPU
//     feature discovery's by default): MiB per GPU;
//  3. InstanceTypeLabel, through s.InstanceTypeGPUMemoryMiB.
//
// A MiB label that is not a base-10 integer in 1..MaxGPUMemoryMiB gives the reason
// naming it, an instance type missing from the table its own reason, and a node
// with none of the labels ReasonInvalidNodeLabel.
func ReadNodeMemory(node *v1.Node, s Settings) NodeMemory {
	if node == nil {
		return NodeMemory{Reason: ReasonMissingNode}
	}
	if raw, ok := node.Labels[s.NodeMemoryLabel]; ok {
		return readMiBLabel(s.NodeMemoryLabel, raw)
	}
	for _, label := range s.VendorMemoryLabels {
		if raw, ok := node.Labels[label]; ok {
			return readMiBLabel(label, raw)
		}
	}
	instanceType, ok := node.Labels[InstanceTypeLabel]
	if !ok {
		return NodeMemory{Reason: ReasonInvalidNodeLabel}
	}
	if mib, known := s.InstanceTypeGPUMemoryMiB[instanceType]; known {
		return NodeMemory{MiB: mib}
	}
	return NodeMemory{Reason: fmt.Sprintf(ReasonUnknownInstanceTypeFormat, instanceType)}
}

func readMiBLabel(label, raw string) NodeMemory {
	memory, ok := parseMiB(raw)
	if !ok {
		return NodeMemory{Reason: fmt.Sprintf(ReasonInvalidMemoryLabelFormat, label)}
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

// Score100 is the memory rule's score on a label already read, 0..MaxScore; 0 for a
// pod without a GPU request and a node without a valid label. With scale = s.ScoreScaleMiB:
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

// ExtenderScore is Score100 in the extender API's range, 0..MaxExtenderScore.
func (m NodeMemory) ExtenderScore(req Requirement, s Settings) int64 {
	return m.Score100(req, s) / (MaxScore / MaxExtenderScore)
}
