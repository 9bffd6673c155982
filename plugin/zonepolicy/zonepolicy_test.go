package zonepolicy

import (
	"strings"
	"testing"
)

func TestJobFromNilPod(t *testing.T) {
	if _, err := JobFromPod(nil, DefaultSettings()); err == nil || err.Error() != ReasonMissingPod {
		t.Fatalf("error = %v, want %q", err, ReasonMissingPod)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := DefaultSettings()
	bad.JobLabel, bad.ZoneLabel, bad.MaxJobSize = "", "", JobSizeLimit+1
	err := bad.Validate()
	if err == nil {
		t.Fatal("no error for empty keys and an out-of-range maximum")
	}
	for _, want := range []string{"jobLabel must not be empty", "zoneLabel must not be empty", "maxJobSize must be 1..1000000, got 1000001"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	bad = DefaultSettings()
	bad.MaxJobSize = 0
	if bad.Validate() == nil {
		t.Error("maxJobSize 0 accepted")
	}
}
