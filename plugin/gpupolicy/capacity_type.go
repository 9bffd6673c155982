package gpupolicy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// The capacity-type rule, the Go twin of policy/capacity_type.py: a pod chooses
// on-demand or spot capacity, required or preferred, in an annotation (else the
// stack's default choice, if any); a node's capacity type comes from the first of our
// label, EKS's and Karpenter's that it carries. For a pod with a choice, a node being
// taken away (a disruption taint) fails whatever the pod tolerates, and a Cluster
// Autoscaler deletion candidate scores half.

const (
	// CapacityTypeAnnotation is the pod annotation holding the pod's CapacityChoice.
	CapacityTypeAnnotation = "training.example.com/capacity-type"
	// CapacityTypeLabel is our node label: on-demand, spot or reserved, exactly.
	CapacityTypeLabel = "training.example.com/capacity-type"
	// EKSCapacityTypeLabel is the label EKS managed node groups write: ON_DEMAND,
	// SPOT or CAPACITY_BLOCK.
	EKSCapacityTypeLabel = "eks.amazonaws.com/capacityType"
	// KarpenterCapacityTypeLabel is the label Karpenter writes: on-demand, spot or reserved.
	KarpenterCapacityTypeLabel = "karpenter.sh/capacity-type"
	// KarpenterInterruptibleReservationLabel is "true" on a node Karpenter launched into an
	// interruptible capacity reservation (its owner can reclaim it at short notice).
	KarpenterInterruptibleReservationLabel = "karpenter.k8s.aws/capacity-reservation-interruptible"

	// DeletionCandidateTaint is Cluster Autoscaler's mark on a node it may remove
	// soon; such a node's score is divided by DeletionCandidateDivisor.
	DeletionCandidateTaint = "DeletionCandidateOfClusterAutoscaler"
	// DeletionCandidateDivisor divides a deletion candidate's score.
	DeletionCandidateDivisor int64 = 2
)

// CapacityType is a node's capacity type; "" when it cannot be known.
type CapacityType string

// Node capacity types, the values of CapacityTypeLabel.
const (
	OnDemand CapacityType = "on-demand"
	Spot     CapacityType = "spot"
	// Reserved capacity (Karpenter's reserved, EKS's CAPACITY_BLOCK) counts as
	// on-demand for this rule: it is not interrupted like spot.
	Reserved CapacityType = "reserved"
)

// CapacityChoice is a pod's choice; "" is no choice (the rule does not judge the pod).
type CapacityChoice string

// Pod choices, the values of CapacityTypeAnnotation.
const (
	NoChoice        CapacityChoice = ""
	RequireOnDemand CapacityChoice = "on-demand"
	RequireSpot     CapacityChoice = "spot"
	PreferOnDemand  CapacityChoice = "prefer-on-demand"
	PreferSpot      CapacityChoice = "prefer-spot"
)

const (
	// Deleting is what DisruptionSignal names for a node whose deletion has begun.
	Deleting = "metadata.deletionTimestamp"
	// Cordoned is what DisruptionSignal names for a node whose spec.unschedulable is true.
	Cordoned = "spec.unschedulable"
)

// DisruptionTaints are the taint keys of a node being taken away; any effect counts.
var DisruptionTaints = []string{
	"node.kubernetes.io/unschedulable",
	"node.kubernetes.io/out-of-service",
	"karpenter.sh/disrupted",
	"ToBeDeletedByClusterAutoscaler",
	"aws-node-termination-handler/spot-itn",
	"aws-node-termination-handler/rebalance-recommendation",
	"aws-node-termination-handler/scheduled-maintenance",
	"aws-node-termination-handler/asg-lifecycle-termination",
}

// vendorSpellings maps a vendor label's value, lower-cased and without - and _, to
// the capacity type it means.
var vendorSpellings = map[string]CapacityType{
	"ondemand":      OnDemand,
	"spot":          Spot,
	"reserved":      Reserved,
	"capacityblock": Reserved,
}

// Reasons of the capacity-type rule; each is also the text of the matching Err* value.
const (
	// ReasonInvalidCapacityChoice: the annotation is not exactly one of the choices.
	ReasonInvalidCapacityChoice = "capacity type must be on-demand, spot, prefer-on-demand or prefer-spot"
	// ReasonUnknownCapacityType: a required choice meets a node whose type is unknown.
	ReasonUnknownCapacityType = "node's capacity type is unknown (no valid capacity-type label)"
	// ReasonNotOnDemand: a pod requiring on-demand meets a spot node.
	ReasonNotOnDemand = "pod requires on-demand capacity; the node is spot"
	// ReasonNotSpot: a pod requiring spot meets an on-demand or reserved node.
	ReasonNotSpot = "pod requires spot capacity; the node is not spot"
	// ReasonNodeBeingRemoved: the node is being deleted, is cordoned or carries one of
	// DisruptionTaints.
	ReasonNodeBeingRemoved = "node is being taken away (being deleted, cordoned, or it carries a disruption taint)"
)

// ErrInvalidCapacityChoice is returned by CapacityChoiceFromPod for an invalid annotation.
var ErrInvalidCapacityChoice = errors.New(ReasonInvalidCapacityChoice)

// CapacitySettings are the keys the capacity-type rule reads and the default choice.
// Start from DefaultCapacitySettings; pass the functions only settings Validate accepts.
type CapacitySettings struct {
	// Annotation is the pod annotation key of the choice.
	Annotation string
	// NodeLabel is our node label key, read before the vendor labels.
	NodeLabel string
	// DefaultChoice is the choice of a pod without the annotation; NoChoice leaves
	// such pods unjudged.
	DefaultChoice CapacityChoice
}

// DefaultCapacitySettings returns the documented keys and no default choice.
func DefaultCapacitySettings() CapacitySettings {
	return CapacitySettings{Annotation: CapacityTypeAnnotation, NodeLabel: CapacityTypeLabel}
}

// Validate reports every field that is empty or not a known value.
func (s CapacitySettings) Validate() error {
	var errs []error
	if s.Annotation == "" {
		errs = append(errs, errors.New("annotation must not be empty"))
	}
	if s.NodeLabel == "" {
		errs = append(errs, errors.New("nodeLabel must not be empty"))
	}
	if s.DefaultChoice != NoChoice && !s.DefaultChoice.valid() {
		errs = append(errs, fmt.Errorf("defaultChoice must be empty, on-demand, spot, prefer-on-demand or prefer-spot, got %q", s.DefaultChoice))
	}
	return errors.Join(errs...)
}

func (c CapacityChoice) valid() bool {
	switch c {
	case RequireOnDemand, RequireSpot, PreferOnDemand, PreferSpot:
		return true
	}
	return false
}

// Required reports whether the choice excludes the other capacity type.
func (c CapacityChoice) Required() bool { return c == RequireOnDemand || c == RequireSpot }

// Wanted is the capacity type the choice requires or prefers (OnDemand or Spot), ""
// for NoChoice.
func (c CapacityChoice) Wanted() CapacityType {
	switch c {
	case RequireOnDemand, PreferOnDemand:
		return OnDemand
	case RequireSpot, PreferSpot:
		return Spot
	}
	return ""
}

// CapacityChoiceFromPod returns the pod's choice: its annotation, else
// s.DefaultChoice. An annotation that is not exactly one of the choices is
// ErrInvalidCapacityChoice; a nil pod is ErrMissingPod.
func CapacityChoiceFromPod(pod *v1.Pod, s CapacitySettings) (CapacityChoice, error) {
	if pod == nil {
		return NoChoice, ErrMissingPod
	}
	raw, ok := pod.Annotations[s.Annotation]
	if !ok {
		return s.DefaultChoice, nil
	}
	if choice := CapacityChoice(raw); choice.valid() {
		return choice, nil
	}
	return NoChoice, ErrInvalidCapacityChoice
}

// NodeCapacityType returns the node's capacity type, "" when it cannot be known: the
// first of s.NodeLabel (exact values), EKSCapacityTypeLabel and
// KarpenterCapacityTypeLabel (ASCII letters in any case, - and _ ignored) that the
// node carries decides.
func NodeCapacityType(node *v1.Node, s CapacitySettings) CapacityType {
	if value, ok := node.Labels[s.NodeLabel]; ok {
		switch capacity := CapacityType(value); capacity {
		case OnDemand, Spot, Reserved:
			return capacity
		}
		return ""
	}
	if value, ok := node.Labels[EKSCapacityTypeLabel]; ok {
		return vendorCapacityType(value)
	}
	if value, ok := node.Labels[KarpenterCapacityTypeLabel]; ok {
		capacity := vendorCapacityType(value)
		if capacity == Reserved && node.Labels[KarpenterInterruptibleReservationLabel] == "true" {
			return Spot
		}
		return capacity
	}
	return ""
}

func vendorCapacityType(value string) CapacityType {
	for i := 0; i < len(value); i++ {
		if value[i] >= utf8.RuneSelf {
			return ""
		}
	}
	folded := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(value))
	return vendorSpellings[folded]
}

// DisruptionSignal says why the node is being taken away: Deleting (Karpenter deletes the
// Node of a NodeClaim it removes and its finalizer holds the Node while it drains),
// Cordoned, or the key of the first of DisruptionTaints it carries; "" when it is not.
// kube-scheduler's NodeUnschedulable lets a pod that tolerates every taint onto a cordoned
// node; a pod with a capacity choice is kept off it here.
func DisruptionSignal(node *v1.Node) string {
	if node.DeletionTimestamp != nil {
		return Deleting
	}
	if node.Spec.Unschedulable {
		return Cordoned
	}
	for _, taint := range node.Spec.Taints {
		for _, key := range DisruptionTaints {
			if taint.Key == key {
				return key
			}
		}
	}
	return ""
}

// NodeCapacity is what the rule reads of a node, read once; see ReadNodeCapacity.
type NodeCapacity struct {
	// Type is the node's capacity type, "" when unknown.
	Type CapacityType
	// Reason is "" for a node that can be judged, else ReasonMissingNode or
	// ReasonNodeBeingRemoved.
	Reason string
	// DeletionCandidate is true when the node carries DeletionCandidateTaint.
	DeletionCandidate bool
}

// ReadNodeCapacity reads the node's capacity type and taints.
func ReadNodeCapacity(node *v1.Node, s CapacitySettings) NodeCapacity {
	if node == nil {
		return NodeCapacity{Reason: ReasonMissingNode}
	}
	read := NodeCapacity{Type: NodeCapacityType(node, s)}
	if DisruptionSignal(node) != "" {
		read.Reason = ReasonNodeBeingRemoved
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == DeletionCandidateTaint {
			read.DeletionCandidate = true
		}
	}
	return read
}

// FitsCapacityType reports whether the node suits a pod with this choice and, if not,
// why. A pod without a choice fits every node (the node is not read).
func FitsCapacityType(choice CapacityChoice, node *v1.Node, s CapacitySettings) (bool, string) {
	if choice == NoChoice {
		return true, ""
	}
	return ReadNodeCapacity(node, s).Fits(choice)
}

// Fits is FitsCapacityType on a node already read: a node being taken away (or
// missing) fails any choice; a required choice fails on the other type
// (ReasonNotOnDemand, ReasonNotSpot) and on an unknown one (ReasonUnknownCapacityType).
func (n NodeCapacity) Fits(choice CapacityChoice) (bool, string) {
	switch {
	case choice == NoChoice:
		return true, ""
	case n.Reason != "":
		return false, n.Reason
	case !choice.Required():
		return true, ""
	}
	switch n.onDemandOrSpot() {
	case "":
		return false, ReasonUnknownCapacityType
	case choice.Wanted():
		return true, ""
	}
	if choice == RequireOnDemand {
		return false, ReasonNotOnDemand
	}
	return false, ReasonNotSpot
}

// CapacityScore100 returns 0..MaxScore: MaxScore on the type the pod requires or
// prefers, 0 on the other or an unknown one, divided by DeletionCandidateDivisor on
// a deletion candidate; 0 for a pod without a choice and a missing node.
func CapacityScore100(choice CapacityChoice, node *v1.Node, s CapacitySettings) int64 {
	if choice == NoChoice || node == nil {
		return 0
	}
	return ReadNodeCapacity(node, s).Score100(choice)
}

// Score100 is CapacityScore100 on a node already read.
func (n NodeCapacity) Score100(choice CapacityChoice) int64 {
	if choice == NoChoice || n.Reason == ReasonMissingNode {
		return 0
	}
	var score int64
	if n.onDemandOrSpot() == choice.Wanted() {
		score = MaxScore
	}
	if n.DeletionCandidate {
		score /= DeletionCandidateDivisor
	}
	return score
}

// onDemandOrSpot is the type as this rule compares it: Reserved counts as OnDemand.
func (n NodeCapacity) onDemandOrSpot() CapacityType {
	if n.Type == Reserved {
		return OnDemand
	}
	return n.Type
}
