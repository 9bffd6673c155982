package gpupolicy

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// RequiredTermsPath is the JSON pointer of a pod's required node selector.
const RequiredTermsPath = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"

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

// MemoryAffinityPatch returns the JSON Patch that writes the pod's minimum into its
// required node affinity, by the rules of policy/node_affinity.py: our expression is
// ANDed into every term that selects something (terms are ORed), an empty term stays
// empty (it selects no node), no term gives one term, preferred terms and nodeSelector
// are untouched, and a pod that already carries it gets no operation. FromPod's errors
// are returned as they are.
func MemoryAffinityPatch(pod *v1.Pod, s Settings) ([]PatchOperation, error) {
	req, err := FromPod(pod, s)
	if err != nil || req.MinMemoryMiB == 0 {
		return nil, err
	}
	expression := MemoryExpression(req.MinMemoryMiB, s)
	affinity := pod.Spec.Affinity
	var required *v1.NodeSelector
	if affinity != nil && affinity.NodeAffinity != nil {
		required = affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	var terms []v1.NodeSelectorTerm
	if required != nil {
		terms = required.NodeSelectorTerms
	}
	merged, changed := mergedTerms(terms, expression)
	if !changed {
		return nil, nil
	}
	selector := &v1.NodeSelector{NodeSelectorTerms: merged}
	switch {
	case affinity == nil:
		return one("/spec/affinity", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}}), nil
	case affinity.NodeAffinity == nil:
		return one("/spec/affinity/nodeAffinity", &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}), nil
	case required == nil:
		return one(RequiredTermsPath, selector), nil
	}
	return one(RequiredTermsPath+"/nodeSelectorTerms", merged), nil
}

func mergedTerms(terms []v1.NodeSelectorTerm, expression v1.NodeSelectorRequirement) ([]v1.NodeSelectorTerm, bool) {
	if len(terms) == 0 {
		return []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{expression}}}, true
	}
	merged := make([]v1.NodeSelectorTerm, len(terms))
	changed := false
	for i, term := range terms {
		merged[i] = term
		if (len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0) || hasExpression(term, expression) {
			continue
		}
		merged[i].MatchExpressions = append(append([]v1.NodeSelectorRequirement(nil), term.MatchExpressions...), expression)
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

func one(path string, value any) []PatchOperation {
	return []PatchOperation{{Op: "add", Path: path, Value: value}}
}
