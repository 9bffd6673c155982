package jobzone

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/pluginargs"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

const (
	// DefaultPermitTimeout is how long a job's members are held at Permit for the
	// rest to be placed: longer than a GPU node launch on EKS (an instance, its NVIDIA
	// driver and device plugin ready: several minutes), so a job whose zone is
	// scaling up is not given up on, and short enough that GPUs held by an incomplete
	// job are released within the quarter hour. It is also the most the framework
	// allows (MaxPermitTimeout).
	DefaultPermitTimeout = 15 * time.Minute
	// DefaultFailedZoneDuration is how long a zone where a job timed out is skipped
	// when that job is planned again, and the longest a zone given up at PostFilter is
	// (that skip ends when room frees in the zone: zone_skips.go).
	DefaultFailedZoneDuration = 10 * time.Minute
	// MaxPermitTimeout is the framework's own cap on a Permit wait (kube-scheduler
	// 1.35 shortens any longer wait to 15 minutes).
	MaxPermitTimeout = 15 * time.Minute
	// MaxFailedZoneDuration bounds failedZoneDuration (a day).
	MaxFailedZoneDuration = 24 * time.Hour
)

// Args are the plugin's optional pluginConfig args; an omitted field keeps its default:
//
//	pluginConfig:
//	- name: JobZone
//	  args:
//	    permitTimeout: 15m
//	    failedZoneDuration: 10m
//	    maxJobSize: 1024
//	    jobLabel: training.example.com/job
//	    podGroupLabel: scheduling.x-k8s.io/pod-group
//	    zonePolicyAnnotation: training.example.com/zone-policy
//	    jobSizeAnnotation: training.example.com/job-size
//	    zoneLabel: topology.kubernetes.io/zone
//	    minMemoryAnnotation: training.example.com/min-gpu-memory-mib
//	    nodeMemoryLabel: training.example.com/gpu-memory-mib
//	    gpuResource: nvidia.com/gpu
//	    vendorMemoryLabels: [karpenter.k8s.aws/instance-gpu-memory, eks.amazonaws.com/instance-gpu-memory, nvidia.com/gpu.memory]
//	    instanceTypeGPUMemoryMiB: {}
//	    capacityTypeAnnotation: training.example.com/capacity-type
//	    capacityTypeNodeLabel: training.example.com/capacity-type
//	    defaultCapacityChoice: ""
//
// minMemoryAnnotation, nodeMemoryLabel, gpuResource, vendorMemoryLabels and
// instanceTypeGPUMemoryMiB are GPUScheduler's (pluginargs.MemoryArgs), and the
// capacityType* fields and defaultCapacityChoice CapacityType's annotation, nodeLabel
// and defaultChoice (read through pluginargs.CapacityArgs): the stack renders the same
// values into each, since the zone plan counts only nodes those plugins let the pod onto. minCandidateNodesPercentage and minCandidateNodesAbsolute are DefaultPreemption's
// args of the same names and defaults: JobZone runs the profile's preemption (preemption.go).
// Unknown fields and out-of-range values stop the
// scheduler at start with an error naming the field.
type Args struct {
	// PermitTimeout is how long the job's members wait at Permit for the whole job.
	PermitTimeout *metav1.Duration `json:"permitTimeout,omitempty"`
	// FailedZoneDuration is how long a zone is skipped after a job timed out there, and the
	// longest a zone given up at PostFilter is skipped.
	FailedZoneDuration *metav1.Duration `json:"failedZoneDuration,omitempty"`
	// MaxJobSize is the largest job-size annotation accepted.
	MaxJobSize           *int64  `json:"maxJobSize,omitempty"`
	JobLabel             *string `json:"jobLabel,omitempty"`
	PodGroupLabel        *string `json:"podGroupLabel,omitempty"`
	ZonePolicyAnnotation *string `json:"zonePolicyAnnotation,omitempty"`
	JobSizeAnnotation    *string `json:"jobSizeAnnotation,omitempty"`
	ZoneLabel            *string `json:"zoneLabel,omitempty"`
	// MemoryArgs are GPUScheduler's args of the same names (minMemoryAnnotation,
	// nodeMemoryLabel, gpuResource, vendorMemoryLabels, instanceTypeGPUMemoryMiB),
	// embedded from the one struct both plugins share.
	pluginargs.MemoryArgs
	// CapacityTypeAnnotation, CapacityTypeNodeLabel and DefaultCapacityChoice are
	// CapacityType's annotation, nodeLabel and defaultChoice.
	CapacityTypeAnnotation *string `json:"capacityTypeAnnotation,omitempty"`
	CapacityTypeNodeLabel  *string `json:"capacityTypeNodeLabel,omitempty"`
	DefaultCapacityChoice  *string `json:"defaultCapacityChoice,omitempty"`
	// MinCandidateNodesPercentage and MinCandidateNodesAbsolute bound how many nodes
	// preemption dry-runs, as DefaultPreemption's args of the same names do.
	MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
	MinCandidateNodesAbsolute   *int32 `json:"minCandidateNodesAbsolute,omitempty"`
}

// config is the validated configuration the plugin runs with.
type config struct {
	zone               zonepolicy.Settings
	gpu                gpupolicy.Settings
	capacity           gpupolicy.CapacitySettings
	permitTimeout      time.Duration
	failedZoneDuration time.Duration
	preemption         schedulerconfig.DefaultPreemptionArgs
}

func configFromArgs(obj runtime.Object) (config, error) {
	var args Args
	if err := pluginargs.Decode(obj, &args); err != nil {
		return config{}, fmt.Errorf("%s args: %w", Name, err)
	}
	c := config{
		zone:               zonepolicy.DefaultSettings(),
		gpu:                gpupolicy.DefaultSettings(),
		capacity:           gpupolicy.DefaultCapacitySettings(),
		permitTimeout:      DefaultPermitTimeout,
		failedZoneDuration: DefaultFailedZoneDuration,
		preemption:         preemptionArgs(args),
	}
	setString(&c.zone.JobLabel, args.JobLabel)
	setString(&c.zone.PodGroupLabel, args.PodGroupLabel)
	setString(&c.zone.ZonePolicyAnnotation, args.ZonePolicyAnnotation)
	setString(&c.zone.JobSizeAnnotation, args.JobSizeAnnotation)
	setString(&c.zone.ZoneLabel, args.ZoneLabel)
	c.gpu = args.MemoryArgs.Apply(c.gpu)
	c.capacity = pluginargs.CapacityArgs{
		Annotation:    args.CapacityTypeAnnotation,
		NodeLabel:     args.CapacityTypeNodeLabel,
		DefaultChoice: args.DefaultCapacityChoice,
	}.Apply(c.capacity)
	if args.MaxJobSize != nil {
		c.zone.MaxJobSize = *args.MaxJobSize
	}
	if args.PermitTimeout != nil {
		c.permitTimeout = args.PermitTimeout.Duration
	}
	if args.FailedZoneDuration != nil {
		c.failedZoneDuration = args.FailedZoneDuration.Duration
	}
	errs := []error{c.zone.Validate(), c.gpu.Validate(), c.capacity.Validate(), validation.ValidateDefaultPreemptionArgs(nil, &c.preemption)}
	for _, d := range []struct {
		name       string
		value, max time.Duration
	}{{"permitTimeout", c.permitTimeout, MaxPermitTimeout}, {"failedZoneDuration", c.failedZoneDuration, MaxFailedZoneDuration}} {
		if d.value <= 0 || d.value > d.max {
			errs = append(errs, fmt.Errorf("%s must be more than 0 and at most %s, got %s", d.name, d.max, d.value))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return config{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return c, nil
}

func setString(field *string, value *string) {
	if value != nil {
		*field = *value
	}
}
