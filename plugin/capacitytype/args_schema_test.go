package capacitytype

import (
	"testing"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestSchemaPluginArgs: CapacityType takes every arg the stack renders for it from the
// settings schema, strictly, with the stack's values.
func TestSchemaPluginArgs(t *testing.T) {
	settings, err := settingsFromArgs(policyvectors.MustLoadSchemaPluginArgs(t, Name))
	if err != nil {
		t.Fatal(err)
	}
	if settings.DefaultChoice != gpupolicy.CapacityChoice("prefer-spot") {
		t.Errorf("defaultChoice = %q, want prefer-spot", settings.DefaultChoice)
	}
}
