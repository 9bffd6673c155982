package jobzone

import (
	"reflect"
	"testing"
	"time"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// TestSchemaPluginArgs: JobZone takes every arg the stack renders for it from the
// settings schema, strictly, with the stack's values; the memory args land where
// GPUScheduler's do (the shared pluginargs.MemoryArgs).
func TestSchemaPluginArgs(t *testing.T) {
	c, err := configFromArgs(policyvectors.MustLoadSchemaPluginArgs(t, Name))
	if err != nil {
		t.Fatal(err)
	}
	if c.permitTimeout != 60*time.Second || c.failedZoneDuration != 120*time.Second {
		t.Errorf("permitTimeout, failedZoneDuration = %s, %s; want 60s, 120s", c.permitTimeout, c.failedZoneDuration)
	}
	if c.zone.MaxJobSize != 64 {
		t.Errorf("maxJobSize = %d, want 64", c.zone.MaxJobSize)
	}
	if c.capacity.DefaultChoice != gpupolicy.CapacityChoice("prefer-spot") {
		t.Errorf("defaultCapacityChoice = %q, want prefer-spot", c.capacity.DefaultChoice)
	}
	if !reflect.DeepEqual(c.gpu.VendorMemoryLabels, []string{"example.com/vram-mib"}) || c.gpu.InstanceTypeGPUMemoryMiB["g5.xlarge"] != 22888 {
		t.Errorf("memory args = %v, %v", c.gpu.VendorMemoryLabels, c.gpu.InstanceTypeGPUMemoryMiB)
	}
}
