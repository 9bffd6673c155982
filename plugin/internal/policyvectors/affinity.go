package policyvectors

import (
	"encoding/json"
	"fmt"
	"testing"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// AffinityFile is the node-affinity vector file name inside the vector directory.
const AffinityFile = "affinity_cases.json"

// AffinityCases is the content of affinity_cases.json.
type AffinityCases struct {
	Schema      int            `json:"schema"`
	Description string         `json:"description"`
	Settings    SettingsFields `json:"settings"`
	// CapacitySettings are the capacity-type rule's settings of every case.
	CapacitySettings CapacitySettingsFields `json:"capacity_settings"`
	Cases            []AffinityCase         `json:"cases"`
}

// AffinityCase is a pod and what writing its minimum into its node affinity gives.
type AffinityCase struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	SettingsOverride json.RawMessage `json:"settings,omitempty"`
	// CapacityOverride is the case's own capacity-type settings, overriding some of the file's.
	CapacityOverride json.RawMessage `json:"capacity_settings,omitempty"`
	Pod              json.RawMessage `json:"pod"`
	Expect           struct {
		// Patch is the expected JSON Patch (an empty list: nothing to change).
		Patch json.RawMessage `json:"patch"`
		// Error is the policy's exact message.
		Error *string `json:"error"`
		// DecodeError is "pod" when the pod must not decode.
		DecodeError string `json:"decode_error"`
	} `json:"expect"`
	// Settings and CapacitySettings are the validated settings of this case;
	// MustLoadAffinity fills them.
	Settings         gpupolicy.Settings         `json:"-"`
	CapacitySettings gpupolicy.CapacitySettings `json:"-"`
}

// MustLoadAffinity loads affinity_cases.json (each case with its settings) for a test.
func MustLoadAffinity(t testing.TB) AffinityCases {
	t.Helper()
	var file AffinityCases
	mustLoadFile(t, AffinityFile, &file)
	for i := range file.Cases {
		c := &file.Cases[i]
		fields, err := file.Settings.override(c.SettingsOverride)
		if err == nil {
			c.Settings, err = fields.Settings()
		}
		if err != nil {
			t.Fatalf("%s: case %q: settings: %v", AffinityFile, c.Name, fmt.Errorf("%w", err))
		}
		capacity, err := file.CapacitySettings.override(c.CapacityOverride)
		if err == nil {
			c.CapacitySettings, err = capacity.Settings()
		}
		if err != nil {
			t.Fatalf("%s: case %q: capacity_settings: %v", AffinityFile, c.Name, err)
		}
	}
	return file
}
