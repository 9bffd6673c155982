package gpupolicy

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// NodeAffinityPath is the JSON pointer of a pod's node affinity.
const NodeAffinityPath = "/spec/affinity/nodeAffinity"

// RequiredTermsPath is the JSON pointer of a pod's required node selector.
const RequiredTermsPath = NodeAffinityPath + "/requiredDuringSchedulingIgnoredDuringExecution"

// PreferredTermsPath is the JSON pointer of a pod's preferred node scheduling terms.
const PreferredTermsPath = NodeAffinityPath + "/preferredDuringSchedulingIgnoredDuringExecution"

// CapacityPreferenceWeight is the weight of the preferred term written for
// PreferOnDemand and PreferSpot.
const CapacityPreferenceWeight int32 = 100

// PatchOperation is one RFC 6902 operation, as an admission webhook returns it.
type PatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// MemoryExpression is the node selector requirement equivalent to "label >= minimumMiB".
func MemoryExpression(minimumMiB int64, s Settings) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{
		Key:      s.NodeMemoryLabel,
		Operator: v1.NodeSelectorOpGt,
		Values:   []string{strconv.FormatInt(minimumMiB-1, 10)},
	}
}

// CapacityExpression is the node selector requirement selecting nodes our label marks
// as wanted (OnDemand, which also admits Reserved as the rule does, or Spot).
func CapacityExpression(wanted CapacityType, c CapacitySettings) v1.NodeSelectorRequirement {
	values := []string{string(Spot)}
	if wanted == OnDemand {
		values = []string{string(OnDemand), string(Reserved)}
	}
	return v1.NodeSelectorRequirement{Key: c.NodeLabel, Operator: v1.NodeSelectorOpIn, Values: values}
}

// NodeAffinityPatch returns the JSON Patch that writes the pod's minimum and
// capacity-type choice into its node affinity, by the rules of
// policy/node_affinity.py: our required expressions are ANDed into every term that
// selects something (terms are ORed), an empty term stays empty (it selects no node),
// no term gives one term; a preferred choice is a preferred term appended unless an
// equal one is there; nodeSelector is untouched, and a pod that already carries all
// of it gets no operation. FromPod's and CapacityChoiceFromPod's errors are returned
// as they are.
func NodeAffinityPatch(pod *v1.Pod, s Settings, c CapacitySettings) ([]PatchOperation, error) {
	req, err := FromPod(pod, s)
	if err != nil {
		return nil, err
	}
	choice, err := CapacityChoiceFromPod(pod, c)
	if err != nil {
		return nil, err
	}
	var expressions []v1.NodeSelectorRequirement
	if req.MinMemoryMiB != 0 {
		expressions = append(expressions, MemoryExpression(req.MinMemoryMiB, s))
	}
	if choice.Required() {
		expressions = append(expressions, CapacityExpression(choice.Wanted(), c))
	}
	var preference *v1.PreferredSchedulingTerm
	if choice != NoChoice && !choice.Required() {
		preference = &v1.PreferredSchedulingTerm{
			Weight:     CapacityPreferenceWeight,
			Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{CapacityExpression(choice.Wanted(), c)}},
		}
	}
	affinity := pod.Spec.Affinity
	var nodeAffinity *v1.NodeAffinity
	if affinity != nil {
		nodeAffinity = affinity.NodeAffinity
	}
	var required *v1.NodeSelector
	var preferred []v1.PreferredSchedulingTerm
	if nodeAffinity != nil {
		required = nodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		preferred = nodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}

	var mergedRequired []v1.NodeSelectorTerm
	requiredChanged, preferredChanged := false, false
	if len(expressions) > 0 {
		var terms []v1.NodeSelectorTerm
		if required != nil {
			terms = required.NodeSelectorTerms
		}
		mergedRequired, requiredChanged = mergedTerms(terms, expressions)
	}
	var newPreferred []v1.PreferredSchedulingTerm
	if preference != nil && !hasPreference(preferred, *preference) {
		newPreferred = append(append([]v1.PreferredSchedulingTerm(nil), preferred...), *preference)
		preferredChanged = true
	}
	if !requiredChanged && !preferredChanged {
		return nil, nil
	}
	fields := &v1.NodeAffinity{}
	if requiredChanged {
		fields.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: mergedRequired}
	}
	if preferredChanged {
		fields.PreferredDuringSchedulingIgnoredDuringExecution = newPreferred
	}
	switch {
	case affinity == nil:
		return one("/spec/affinity", &v1.Affinity{NodeAffinity: fields}), nil
	case nodeAffinity == nil:
		return one(NodeAffinityPath, fields), nil
	}
	var ops []PatchOperation
	if requiredChanged {
		if required == nil {
			ops = append(ops, one(RequiredTermsPath, fields.RequiredDuringSchedulingIgnoredDuringExecution)...)
		} else {
			ops = append(ops, one(RequiredTermsPath+"/nodeSelectorTerms", mergedRequired)...)
		}
	}
	if preferredChanged {
		ops = append(ops, one(PreferredTermsPath, newPreferred)...)
	}
	return ops, nil
}

func mergedTerms(terms []v1.NodeSelectorTerm, expressions []v1.NodeSelectorRequirement) ([]v1.NodeSelectorTerm, bool) {
	if len(terms) == 0 {
		return []v1.NodeSelectorTerm{{MatchExpressions: expressions}}, true
	}
	merged := make([]v1.NodeSelectorTerm, len(terms))
	changed := false
	for i, term := range terms {
		merged[i] = term
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		var missing []v1.NodeSelectorRequirement
		for _, expression := range expressions {
			if !hasExpression(term, expression) {
				missing = append(missing, expression)
			}
		}
		if len(missing) == 0 {
			continue
		}
		merged[i].MatchExpressions = append(append([]v1.NodeSelectorRequirement(nil), term.MatchExpressions...), missing...)
		changed = true
	}
	return merged, changed
}

func hasExpression(term v1.NodeSelectorTerm, expression v1.NodeSelectorRequirement) bool {
	for _, existing := range term.MatchExpressions {
		if apiequality.Semantic.DeepEqual(existing, expression) {
			return true
		}
	}
	return false
}

func hasPreference(terms []v1.PreferredSchedulingTerm, preference v1.PreferredSchedulingTerm) bool {
	for _, existing := range terms {
		if apiequality.Semantic.DeepEqual(existing, preference) {
			return true
		}
	}
	return false
}

func one(path string, value any) []PatchOperation {
	return []PatchOperation{{Op: "add", Path: path, Value: value}}
}
