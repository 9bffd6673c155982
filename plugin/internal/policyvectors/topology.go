package policyvectors

import (
	"encoding/json"
	"testing"

	"example.com/gpu-scheduler-eks/plugin/topology"
)

// TopologyFile is the network topology vector file name inside the vector directory.
const TopologyFile = "topology_cases.json"

// TopologyCases is the content of topology_cases.json.
type TopologyCases struct {
	Schema      int                     `json:"schema"`
	Description string                  `json:"description"`
	Settings    TopologySettingsFields  `json:"settings"`
	Choices     []TopologyChoiceCase    `json:"choices"`
	Plans       []TopologyPlanCase      `json:"plans"`
	Generated   []TopologyGeneratedCase `json:"generated"`
}

func (f TopologyCases) schemaVersion() int { return f.Schema }

// TopologySettingsFields are the topology settings, in the vectors' spelling.
type TopologySettingsFields struct {
	Annotation       string `json:"annotation"`
	LayerLabelPrefix string `json:"layer_label_prefix"`
	MaxLayers        int    `json:"max_layers"`
}

// Settings converts the fields into validated settings.
func (f TopologySettingsFields) Settings() (topology.Settings, error) {
	s := topology.Settings{Annotation: f.Annotation, LayerLabelPrefix: f.LayerLabelPrefix, MaxLayers: f.MaxLayers}
	return s, s.Validate()
}

// TopologyChoiceCase is an annotation value (null: absent) and the choice it states, or
// the policy's error.
type TopologyChoiceCase struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	SettingsOverride json.RawMessage `json:"settings,omitempty"`
	Value            *string         `json:"value"`
	Expect           struct {
		Choice string `json:"choice"`
		Error  string `json:"error"`
	} `json:"expect"`
	// Settings are the validated settings of this case; MustLoadTopology fills them.
	Settings topology.Settings `json:"-"`
}

// TopologyNodeFields is a node of a plan case: its labels and free GPUs.
type TopologyNodeFields struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels"`
	FreeGPUs int64             `json:"free_gpus"`
}

// TopologyPlanCase is a zone, a job and the plan expected of them.
type TopologyPlanCase struct {
	Name        string               `json:"name"`
	Description string               `json:"description"`
	MaxLayers   int                  `json:"max_layers"`
	Nodes       []TopologyNodeFields `json:"nodes"`
	Members     []int64              `json:"members"`
	Choice      string               `json:"choice"`
	Expect      struct {
		Nodes   []string `json:"nodes"`
		Layers  []int64  `json:"layers"`
		Message string   `json:"message"`
	} `json:"expect"`
}

// TopologyGeneratedCase is a small random zone and job with the least cost an
// exhaustive search found (nil: no plan).
type TopologyGeneratedCase struct {
	Name      string               `json:"name"`
	MaxLayers int                  `json:"max_layers"`
	Nodes     []TopologyNodeFields `json:"nodes"`
	Members   []int64              `json:"members"`
	Choice    string               `json:"choice"`
	Optimum   []int64              `json:"optimum"`
}

// MustLoadTopology reads topology_cases.json and validates each choice case's settings.
func MustLoadTopology(t testing.TB) TopologyCases {
	t.Helper()
	var file TopologyCases
	mustLoadFile(t, TopologyFile, &file)
	for i := range file.Choices {
		c := &file.Choices[i]
		fields := file.Settings
		if len(c.SettingsOverride) > 0 {
			if err := strictDecode(c.SettingsOverride, &fields); err != nil {
				t.Fatalf("%s: case %q: settings: %v", TopologyFile, c.Name, err)
			}
		}
		settings, err := fields.Settings()
		if err != nil {
			t.Fatalf("%s: case %q: settings: %v", TopologyFile, c.Name, err)
		}
		c.Settings = settings
	}
	return file
}

// Zone is a case's nodes as the planner takes them, read with maxLayers layers.
func Zone(nodes []TopologyNodeFields, maxLayers int) []topology.Node {
	settings := topology.DefaultSettings()
	settings.MaxLayers = maxLayers
	zone := make([]topology.Node, 0, len(nodes))
	for _, node := range nodes {
		zone = append(zone, topology.Node{Name: node.Name, Path: topology.NodePath(node.Labels, settings), FreeGPUs: node.FreeGPUs})
	}
	return zone
}
