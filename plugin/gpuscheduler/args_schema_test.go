package gpuscheduler

import (
	"reflect"
	"testing"

	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestSchemaPluginArgs: GPUScheduler takes every arg the stack renders for it from the
// settings schema, strictly, with the stack's values.
func TestSchemaPluginArgs(t *testing.T) {
	settings, err := settingsFromArgs(policyvectors.MustLoadSchemaPluginArgs(t, Name))
	if err != nil {
		t.Fatal(err)
	}
	if settings.ScoringStrategy != "best-fit" {
		t.Errorf("scoringStrategy = %q, want best-fit", settings.ScoringStrategy)
	}
	if !reflect.DeepEqual(settings.VendorMemoryLabels, []string{"example.com/vram-mib"}) {
		t.Errorf("vendorMemoryLabels = %v", settings.VendorMemoryLabels)
	}
	if settings.InstanceTypeGPUMemoryMiB["g5.xlarge"] != 22888 {
		t.Errorf("instanceTypeGPUMemoryMiB = %v", settings.InstanceTypeGPUMemoryMiB)
	}
}
