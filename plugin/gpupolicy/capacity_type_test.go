package gpupolicy

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCapacitySettingsValidate(t *testing.T) {
	if err := DefaultCapacitySettings().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		name string
		edit func(*CapacitySettings)
		want string
	}{
		{"empty annotation", func(s *CapacitySettings) { s.Annotation = "" }, "annotation must not be empty"},
		{"empty label", func(s *CapacitySettings) { s.NodeLabel = "" }, "nodeLabel must not be empty"},
		{"unknown default", func(s *CapacitySettings) { s.DefaultChoice = "SPOT" }, `defaultChoice must be empty, on-demand, spot, prefer-on-demand or prefer-spot, got "SPOT"`},
		{"reserved is no choice", func(s *CapacitySettings) { s.DefaultChoice = "reserved" }, `got "reserved"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultCapacitySettings()
			tt.edit(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
	for _, choice := range []CapacityChoice{RequireOnDemand, RequireSpot, PreferOnDemand, PreferSpot} {
		s := DefaultCapacitySettings()
		s.DefaultChoice = choice
		if err := s.Validate(); err != nil {
			t.Errorf("default %q: %v", choice, err)
		}
	}
}

func TestCapacityChoiceMethods(t *testing.T) {
	tests := []struct {
		choice   CapacityChoice
		required bool
		wanted   CapacityType
	}{
		{NoChoice, false, ""},
		{RequireOnDemand, true, OnDemand},
		{RequireSpot, true, Spot},
		{PreferOnDemand, false, OnDemand},
		{PreferSpot, false, Spot},
	}
	for _, tt := range tests {
		if tt.choice.Required() != tt.required || tt.choice.Wanted() != tt.wanted {
			t.Errorf("%q: Required %v Wanted %q; want %v %q", tt.choice, tt.choice.Required(), tt.choice.Wanted(), tt.required, tt.wanted)
		}
	}
}

func TestDisruptionSignalNamesTheFirstTaint(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{Taints: []v1.Taint{
		{Key: "nvidia.com/gpu", Effect: v1.TaintEffectNoSchedule},
		{Key: "ToBeDeletedByClusterAutoscaler", Effect: v1.TaintEffectNoSchedule},
		{Key: "karpenter.sh/disrupted", Effect: v1.TaintEffectNoSchedule},
	}}}
	if got := DisruptionSignal(node); got != "ToBeDeletedByClusterAutoscaler" {
		t.Fatalf("DisruptionSignal = %q", got)
	}
	node.Spec.Unschedulable = true
	if got := DisruptionSignal(node); got != Cordoned {
		t.Fatalf("DisruptionSignal of a cordoned node = %q, want %q", got, Cordoned)
	}
	node.DeletionTimestamp = &metav1.Time{}
	if got := DisruptionSignal(node); got != Deleting {
		t.Fatalf("DisruptionSignal of a node being deleted = %q, want %q", got, Deleting)
	}
	node.DeletionTimestamp = nil
	node.Spec.Unschedulable = false
	node.Spec.Taints = node.Spec.Taints[:1]
	if got := DisruptionSignal(node); got != "" {
		t.Fatalf("DisruptionSignal = %q, want none", got)
	}
}
