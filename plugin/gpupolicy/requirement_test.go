package gpupolicy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gpuPod returns a pod whose only container requests gpus GPUs (none when empty),
// with the minimum-memory annotation set to minimum unless minimum is "-".
func gpuPod(gpus, minimum string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default"}}
	container := v1.Container{Name: "train"}
	if gpus != "" {
		container.Resources.Requests = v1.ResourceList{GPUResource: resource.MustParse(gpus)}
	}
	pod.Spec.Containers = []v1.Container{container}
	if minimum != "-" {
		pod.Annotations = map[string]string{MinMemoryAnnotation: minimum}
	}
	return pod
}

func TestFromPod(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := gpuPod("", "40960")
	sidecar.Spec.InitContainers = []v1.Container{{
		Name:          "gpu-sidecar",
		RestartPolicy: &always,
		Resources:     v1.ResourceRequirements{Requests: v1.ResourceList{GPUResource: resource.MustParse("1")}},
	}}
	initOnly := gpuPod("", "40960")
	initOnly.Spec.InitContainers = []v1.Container{{
		Name:      "warmup",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{GPUResource: resource.MustParse("1")}},
	}}
	overhead := gpuPod("", "40960")
	overhead.Spec.Overhead = v1.ResourceList{GPUResource: resource.MustParse("1")}
	podLevel := gpuPod("", "40960")
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("1"),
		GPUResource:    resource.MustParse("1"),
	}}

	tests := []struct {
		name string
		pod  *v1.Pod
		want Requirement
		err  error
	}{
		{"no annotation, no GPU", gpuPod("", "-"), Requirement{}, nil},
		{"no annotation, GPU", gpuPod("1", "-"), Requirement{HasGPU: true}, nil},
		{"minimum with GPU", gpuPod("2", "40960"), Requirement{HasGPU: true, MinMemoryMiB: 40960}, nil},
		{"largest minimum", gpuPod("1", "1048576"), Requirement{HasGPU: true, MinMemoryMiB: MaxGPUMemoryMiB}, nil},
		{"smallest minimum", gpuPod("1", "1"), Requirement{HasGPU: true, MinMemoryMiB: 1}, nil},
		{"plus sign and leading zeros (ParseInt accepts)", gpuPod("1", "+0016384"), Requirement{HasGPU: true, MinMemoryMiB: 16384}, nil},
		{"fractional GPU request is positive", gpuPod("500m", "16384"), Requirement{HasGPU: true, MinMemoryMiB: 16384}, nil},
		{"sidecar GPU counts", sidecar, Requirement{HasGPU: true, MinMemoryMiB: 40960}, nil},
		{"init container GPU counts (max of init and sum)", initOnly, Requirement{HasGPU: true, MinMemoryMiB: 40960}, nil},
		{"overhead GPU counts", overhead, Requirement{HasGPU: true, MinMemoryMiB: 40960}, nil},
		{"pod-level requests never set GPUs", podLevel, Requirement{}, ErrRequiresGPURequest},
		{"zero", gpuPod("1", "0"), Requirement{}, ErrInvalidMinMemory},
		{"negative", gpuPod("1", "-1"), Requirement{}, ErrInvalidMinMemory},
		{"above range", gpuPod("1", "1048577"), Requirement{}, ErrInvalidMinMemory},
		{"beyond int64", gpuPod("1", "99999999999999999999"), Requirement{}, ErrInvalidMinMemory},
		{"empty", gpuPod("1", ""), Requirement{}, ErrInvalidMinMemory},
		{"space", gpuPod("1", " 40960"), Requirement{}, ErrInvalidMinMemory},
		{"underscore", gpuPod("1", "40_960"), Requirement{}, ErrInvalidMinMemory},
		{"unit suffix", gpuPod("1", "40Gi"), Requirement{}, ErrInvalidMinMemory},
		{"non-ASCII digits", gpuPod("1", "４０９６０"), Requirement{}, ErrInvalidMinMemory},
		{"minimum without GPU request", gpuPod("", "40960"), Requirement{}, ErrRequiresGPURequest},
		{"minimum with zero GPUs", gpuPod("0", "40960"), Requirement{}, ErrRequiresGPURequest},
		{"parse error wins over missing GPU", gpuPod("", "abc"), Requirement{}, ErrInvalidMinMemory},
		{"nil pod", nil, Requirement{}, ErrMissingPod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromPod(tt.pod, DefaultSettings())
			if !errors.Is(err, tt.err) {
				t.Fatalf("error = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("requirement = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFromPodUsesConfiguredKeys(t *testing.T) {
	s := DefaultSettings()
	s.MinMemoryAnnotation = "example.org/vram"
	s.GPUResource = "amd.com/gpu"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			"example.org/vram":  "24576",
			MinMemoryAnnotation: "not read",
		}},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:      "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"amd.com/gpu": resource.MustParse("1")}},
		}}},
	}
	got, err := FromPod(pod, s)
	if err != nil || got != (Requirement{HasGPU: true, MinMemoryMiB: 24576}) {
		t.Fatalf("FromPod = %+v, %v", got, err)
	}
	if _, err := FromPod(gpuPod("1", "24576"), s); err != nil {
		t.Fatalf("an nvidia.com/gpu pod without the configured annotation must have no minimum: %v", err)
	}
	if got, _ := FromPod(gpuPod("1", "-"), s); got.HasGPU {
		t.Fatalf("nvidia.com/gpu must not count when the GPU resource is amd.com/gpu")
	}
}

func TestReasonsNameTheRange(t *testing.T) {
	want := fmt.Sprintf("1..%d MiB", MaxGPUMemoryMiB)
	if !strings.HasSuffix(ReasonInvalidMinMemory, want) {
		t.Fatalf("ReasonInvalidMinMemory %q does not end with %q", ReasonInvalidMinMemory, want)
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := Settings{ScoreScaleMiB: MaxGPUMemoryMiB + 1}
	err := bad.Validate()
	if err == nil {
		t.Fatal("empty settings validated")
	}
	for _, field := range []string{"minMemoryAnnotation", "nodeMemoryLabel", "gpuResource", "scoreScaleMiB", "scoringStrategy"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	for _, scale := range []int64{1, MaxGPUMemoryMiB} {
		s := DefaultSettings()
		s.ScoreScaleMiB = scale
		if err := s.Validate(); err != nil {
			t.Errorf("scale %d: %v", scale, err)
		}
	}
	for _, strategy := range []string{PreferLarger, BestFit} {
		s := DefaultSettings()
		s.ScoringStrategy = strategy
		if err := s.Validate(); err != nil {
			t.Errorf("strategy %q: %v", strategy, err)
		}
	}
	if DefaultSettings().ScoringStrategy != PreferLarger {
		t.Errorf("the default strategy must stay %s", PreferLarger)
	}
}

func TestSchemeSettingsValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Settings)
		want   string
	}{
		{"own label is the instance type", func(s *Settings) { s.NodeMemoryLabel = InstanceTypeLabel }, "nodeMemoryLabel must not be node.kubernetes.io/instance-type"},
		{"empty vendor label", func(s *Settings) { s.VendorMemoryLabels = []string{KarpenterGPUMemoryLabel, ""} }, "vendorMemoryLabels must not hold an empty label"},
		{"vendor label is the instance type", func(s *Settings) { s.VendorMemoryLabels = []string{InstanceTypeLabel} }, "vendorMemoryLabels must not hold node.kubernetes.io/instance-type"},
		{"empty instance type", func(s *Settings) { s.InstanceTypeGPUMemoryMiB = map[string]int64{"": 16384} }, "instanceTypeGPUMemoryMiB must not have an empty instance type"},
		{"zero MiB", func(s *Settings) { s.InstanceTypeGPUMemoryMiB = map[string]int64{"g5.xlarge": 0} }, `instanceTypeGPUMemoryMiB["g5.xlarge"] must be 1..1048576, got 0`},
		{"too many MiB", func(s *Settings) { s.InstanceTypeGPUMemoryMiB = map[string]int64{"g5.xlarge": MaxGPUMemoryMiB + 1} }, "must be 1..1048576, got 1048577"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSettings()
			tt.change(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
	s := DefaultSettings()
	s.VendorMemoryLabels = nil
	s.InstanceTypeGPUMemoryMiB = map[string]int64{"g5.xlarge": 22888, "p5.48xlarge": MaxGPUMemoryMiB}
	if err := s.Validate(); err != nil {
		t.Errorf("no vendor labels and a valid table: %v", err)
	}
}
