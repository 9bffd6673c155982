package policyvectors

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// CapacityTypeFile is the capacity-type vector file name inside the vector directory.
const CapacityTypeFile = "capacity_type_cases.json"

// CapacityTypeCases is the content of capacity_type_cases.json.
type CapacityTypeCases struct {
	Schema      int                    `json:"schema"`
	Description string                 `json:"description"`
	Settings    CapacitySettingsFields `json:"settings"`
	Cases       []CapacityTypeCase     `json:"cases"`
}

// CapacitySettingsFields are the capacity-type settings in the vectors' spelling.
type CapacitySettingsFields struct {
	Annotation    string `json:"annotation"`
	NodeLabel     string `json:"node_label"`
	DefaultChoice string `json:"default_choice"`
}

// Settings converts the fields into validated settings.
func (f CapacitySettingsFields) Settings() (gpupolicy.CapacitySettings, error) {
	s := gpupolicy.CapacitySettings{
		Annotation:    f.Annotation,
		NodeLabel:     f.NodeLabel,
		DefaultChoice: gpupolicy.CapacityChoice(f.DefaultChoice),
	}
	return s, s.Validate()
}

func (f CapacitySettingsFields) override(raw json.RawMessage) (CapacitySettingsFields, error) {
	return overridden(f, raw)
}

// CapacityTypeCase is one pod/node pair and what the capacity-type rule must say.
type CapacityTypeCase struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	SettingsOverride json.RawMessage `json:"settings,omitempty"`
	Pod              json.RawMessage `json:"pod"`
	Node             json.RawMessage `json:"node"`
	Expect           struct {
		// DecodeError is "pod" or "node" when that JSON must not decode.
		DecodeError string `json:"decode_error"`
		// Error is the exact error of reading the pod's choice.
		Error *string `json:"error"`
		// Choice, CapacityType (nil for a null node), Fits, Reason and Score100 are
		// the verdict otherwise.
		Choice       *string `json:"choice"`
		CapacityType *string `json:"capacity_type"`
		Fits         *bool   `json:"fits"`
		Reason       *string `json:"reason"`
		Score100     *int64  `json:"score_100"`
	} `json:"expect"`
	// Settings are the validated settings of this case; MustLoadCapacityType fills them.
	Settings gpupolicy.CapacitySettings `json:"-"`
}

// DecodePod decodes the case's pod; JSON null gives a nil pod.
func (c CapacityTypeCase) DecodePod() (*v1.Pod, error) {
	return PolicyCase{Pod: c.Pod}.DecodePod()
}

// DecodeNode decodes the case's node; JSON null gives a nil node.
func (c CapacityTypeCase) DecodeNode() (*v1.Node, error) {
	return PolicyCase{Node: c.Node}.DecodeNode()
}

func (c CapacityTypeCase) check() error {
	e := c.Expect
	switch {
	case e.DecodeError == "pod" || e.DecodeError == "node":
		return nil
	case e.DecodeError != "":
		return fmt.Errorf("decode_error must be \"pod\" or \"node\", got %q", e.DecodeError)
	case e.Error != nil:
		return nil
	case e.Choice == nil || e.Fits == nil || e.Reason == nil || e.Score100 == nil:
		return fmt.Errorf("expect needs error, decode_error, or choice, fits, reason and score_100")
	}
	return nil
}

// MustLoadCapacityType loads capacity_type_cases.json (each case with its settings)
// for a test, failing it on any error; it also returns the directory (Dir).
func MustLoadCapacityType(t testing.TB) (CapacityTypeCases, string) {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	var file CapacityTypeCases
	if err := load(filepath.Join(dir, CapacityTypeFile), &file); err != nil {
		t.Fatal(err)
	}
	if file.Schema != Schema {
		t.Fatalf("%s: schema %d, this loader reads %d", CapacityTypeFile, file.Schema, Schema)
	}
	seen := make(map[string]bool, len(file.Cases))
	for i := range file.Cases {
		c := &file.Cases[i]
		if c.Name == "" || seen[c.Name] {
			t.Fatalf("%s: case %d: name %q is empty or repeated", CapacityTypeFile, i, c.Name)
		}
		seen[c.Name] = true
		if err := c.check(); err != nil {
			t.Fatalf("%s: case %q: %v", CapacityTypeFile, c.Name, err)
		}
		fields, err := file.Settings.override(c.SettingsOverride)
		if err == nil {
			c.Settings, err = fields.Settings()
		}
		if err != nil {
			t.Fatalf("%s: case %q: settings: %v", CapacityTypeFile, c.Name, err)
		}
	}
	return file, dir
}
