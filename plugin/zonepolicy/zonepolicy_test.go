package zonepolicy

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/gpu-scheduler-eks/plugin/topology"
)

func TestJobFromNilPod(t *testing.T) {
	if _, err := JobFromPod(nil, DefaultSettings(), nil); err == nil || err.Error() != ReasonMissingPod {
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

// An Indexed Job's pod without the size annotation: no size is guessed without its Job,
// and DeclaredJob says where the size is.
func TestIndexedJobSizeNeedsItsJob(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace:   "ml",
		Labels:      map[string]string{JobNameLabel: "ft", JobControllerUIDLabel: "u1"},
		Annotations: map[string]string{ZonePolicyAnnotation: SameZone, JobCompletionIndex: "0"},
	}}
	want := fmt.Sprintf(SizeNotOnPodFormat, "an Indexed Job", JobSizeAnnotation)
	if _, err := JobFromPod(pod, DefaultSettings(), nil); err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	job, err := DeclaredJob(pod, DefaultSettings())
	if err != nil || job == nil || job.Size != 0 || job.SizeFrom != SizeFromCompletions || job.Name != "indexed-job/ft/u1" {
		t.Fatalf("DeclaredJob = %+v, %v", job, err)
	}
}

func TestDeclaredJobCarriesItsNetworkTopologyChoice(t *testing.T) {
	settings := DefaultSettings()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{JobLabel: "llm"},
		Annotations: map[string]string{
			ZonePolicyAnnotation: SameZone, JobSizeAnnotation: "4",
		},
	}}
	job, err := DeclaredJob(pod, settings)
	if err != nil || job.Topology != (topology.Choice{}) {
		t.Fatalf("without the annotation: %+v, %v; want preferred", job, err)
	}
	pod.Annotations[topology.Annotation] = "required:layer-3"
	job, err = DeclaredJob(pod, settings)
	if err != nil || job.Topology != (topology.Choice{RequiredLayer: 3}) {
		t.Fatalf("required:layer-3: %+v, %v", job, err)
	}
	settings.Topology.MaxLayers = 2
	if _, err := DeclaredJob(pod, settings); err == nil || err.Error() != fmt.Sprintf(topology.InvalidChoiceFormat, 2) {
		t.Fatalf("a layer above the setting: %v", err)
	}
}
