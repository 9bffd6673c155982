// Package topology holds the network topology rule inside a zone: a same-zone job's
// choice (preferred, or required at a layer), where each node sits in the network
// (the topology.k8s.aws/network-node-layer-N labels), and the plan that packs the job's
// members under the fewest network nodes. It is the Go twin of the Python
// policy/network_topology.py and policy/topology_plan.py; both are held to the shared
// vectors in tests/vectors/topology_cases.json. It does no I/O and knows nothing of the
// scheduler framework.
package topology

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

const (
	// Annotation is the pod annotation holding a same-zone job's network topology choice.
	Annotation = "training.example.com/network-topology"
	// Preferred is the choice for the fewest network nodes, climbing a layer only when
	// the job needs it; a same-zone job without the annotation has it.
	Preferred = "preferred"
	// RequiredPrefix starts the choice "every member under one network node of layer N".
	RequiredPrefix = "required:layer-"
	// LayerLabelPrefix starts the node labels of layers 1 (top) to N (bottom).
	LayerLabelPrefix = "topology.k8s.aws/network-node-layer-"
	// MaxLayers is the default number of layers read from a node.
	MaxLayers = 4
	// LayerLimit is the largest value Settings.MaxLayers may be set to.
	LayerLimit = 16
)

const (
	// InvalidChoiceFormat formats, with Settings.MaxLayers, the reason for a choice that
	// is neither Preferred nor RequiredPrefix followed by a layer in range.
	InvalidChoiceFormat = "network topology must be preferred or required:layer-N with N from 1 to %d"
	// ReasonWithoutZonePolicy: the annotation on a pod that is in no same-zone job.
	ReasonWithoutZonePolicy = "network topology requires zone policy same-zone"
)

// Settings are the keys the rule reads and how many layers it reads. Start from
// DefaultSettings and pass only settings that Validate accepts.
type Settings struct {
	Annotation       string
	LayerLabelPrefix string
	MaxLayers        int
}

// DefaultSettings returns the settings with every field at its documented default.
func DefaultSettings() Settings {
	return Settings{Annotation: Annotation, LayerLabelPrefix: LayerLabelPrefix, MaxLayers: MaxLayers}
}

// Validate reports every field that is empty or out of range.
func (s Settings) Validate() error {
	var errs []error
	if s.Annotation == "" {
		errs = append(errs, errors.New("networkTopologyAnnotation must not be empty"))
	}
	if s.LayerLabelPrefix == "" {
		errs = append(errs, errors.New("networkLayerLabelPrefix must not be empty"))
	}
	if s.MaxLayers < 1 || s.MaxLayers > LayerLimit {
		errs = append(errs, fmt.Errorf("maxNetworkLayers must be 1..%d, got %d", LayerLimit, s.MaxLayers))
	}
	return errors.Join(errs...)
}

// LayerLabel is the node label of layer (1 is the top).
func (s Settings) LayerLabel(layer int) string {
	return s.LayerLabelPrefix + strconv.Itoa(layer)
}

// Choice is a same-zone job's network topology choice; the zero value is Preferred.
type Choice struct {
	// RequiredLayer is 0 for Preferred, else the layer (1 is the top) one network node
	// of which must hold every member.
	RequiredLayer int
}

// String is the choice as the annotation writes it.
func (c Choice) String() string {
	if c.RequiredLayer == 0 {
		return Preferred
	}
	return RequiredPrefix + strconv.Itoa(c.RequiredLayer)
}

// ParseChoice reads an annotation value (present false: absent, which is Preferred).
// Anything but Preferred or RequiredPrefix followed by a base-10 integer 1..MaxLayers
// (strconv.ParseInt rules) is an error with InvalidChoiceFormat's message.
func ParseChoice(raw string, present bool, s Settings) (Choice, error) {
	if !present || raw == Preferred {
		return Choice{}, nil
	}
	if rest, ok := strings.CutPrefix(raw, RequiredPrefix); ok {
		if layer, err := strconv.ParseInt(rest, 10, 64); err == nil && layer >= 1 && layer <= int64(s.MaxLayers) {
			return Choice{RequiredLayer: int(layer)}, nil
		}
	}
	return Choice{}, fmt.Errorf(InvalidChoiceFormat, s.MaxLayers)
}

// NodePath is the node's network nodes from the top layer down: the values of layers
// 1, 2, ... as far as they run without a gap (an empty value counts as absent), at most
// MaxLayers long. Empty for a node without the labels; the last entry is its bottom.
func NodePath(labels map[string]string, s Settings) []string {
	var path []string
	for layer := 1; layer <= s.MaxLayers; layer++ {
		value := labels[s.LayerLabel(layer)]
		if value == "" {
			break
		}
		path = append(path, value)
	}
	return path
}
