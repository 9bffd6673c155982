// Package zonepolicy holds the same-zone job rules: which pods form a job that must
// run in one Availability Zone (our label, or the labels of the controller that made the
// pod: identity.go), how big the job is, and which zone holds it whole.
// It is the Go twin of the Python policy/job_zone.py; both are held to the shared
// vectors in tests/vectors/zone_cases.json. It does no I/O and knows nothing of the
// scheduler framework.
package zonepolicy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"example.com/gpu-scheduler-eks/plugin/topology"
)

const (
	// JobLabel is the pod label naming the job the pod belongs to (within its namespace).
	JobLabel = "training.example.com/job"
	// PodGroupLabel is scheduler-plugins' Coscheduling label; it names the job when
	// JobLabel does not.
	PodGroupLabel = "scheduling.x-k8s.io/pod-group"
	// ZonePolicyAnnotation is the pod annotation saying where the job's members may run.
	ZonePolicyAnnotation = "training.example.com/zone-policy"
	// SameZone is ZonePolicyAnnotation's one value: every member in one zone.
	SameZone = "same-zone"
	// JobSizeAnnotation is the pod annotation holding the number of pods in the job.
	JobSizeAnnotation = "training.example.com/job-size"
	// ZoneLabel is the node label holding the node's Availability Zone.
	ZoneLabel = v1.LabelTopologyZone
	// MaxJobSize is the default largest job size a pod may declare.
	MaxJobSize int64 = 1024
	// JobSizeLimit is the largest value Settings.MaxJobSize may be set to.
	JobSizeLimit int64 = 1_000_000
)

// Reasons JobFromPod fails with, and the formats of the messages built from them.
const (
	// ReasonMissingPod: there is no pod to judge.
	ReasonMissingPod = "missing pod"
	// ReasonInvalidZonePolicy: the zone policy is not SameZone.
	ReasonInvalidZonePolicy = "zone policy must be " + SameZone
	// ReasonInvalidJobSizeFormat formats, with Settings.MaxJobSize, the message for a
	// job size that is not a base-10 integer in 1..MaxJobSize.
	ReasonInvalidJobSizeFormat = "job size must be a base-10 integer from 1 to %d"
	// ReasonMissingJobName: same-zone on a pod no source names a job for.
	ReasonMissingJobName = "zone policy same-zone requires a job name label"
	// ReasonMissingJobSize: same-zone with our job label but without a job size.
	ReasonMissingJobSize = "zone policy same-zone requires a job size"
	// SizeNotOnPodFormat formats, with what made the pods and the job-size annotation,
	// the message for a controller's job whose size is only on the object it made the
	// pods from.
	SizeNotOnPodFormat = ReasonMissingJobSize + ": %s's pods do not carry its size; set the annotation %s on the pod template"
	// InvalidControllerSizeFormat formats, with the annotation and Settings.MaxJobSize,
	// the message for a size a controller wrote on the pod that is out of range.
	InvalidControllerSizeFormat = "job size from %s must be a base-10 integer from 1 to %d"
	// ReasonJobSizeWithoutZonePolicy: a job size without same-zone.
	ReasonJobSizeWithoutZonePolicy = "job size requires zone policy same-zone"
	// NoZoneFitsFormat formats, with the job size and the per-zone counts, the
	// message of a plan that found no zone.
	NoZoneFitsFormat = "no zone can hold all %d pods of the job: %s"
	// NoZones is NoZoneFitsFormat's per-zone part when there is no zone at all.
	NoZones = "no node has a zone label"
	// RecentlyFailed marks a zone skipped because a job recently timed out there.
	RecentlyFailed = "recently failed"
)

// Settings are the keys the rule reads and the largest job size. Start from
// DefaultSettings and pass only settings that Validate accepts.
type Settings struct {
	JobLabel             string
	PodGroupLabel        string
	ZonePolicyAnnotation string
	JobSizeAnnotation    string
	ZoneLabel            string
	MaxJobSize           int64
	// Topology are the keys of the job's network topology choice (package topology).
	Topology topology.Settings
}

// DefaultSettings returns the settings with every field at its documented default.
func DefaultSettings() Settings {
	return Settings{
		JobLabel:             JobLabel,
		PodGroupLabel:        PodGroupLabel,
		ZonePolicyAnnotation: ZonePolicyAnnotation,
		JobSizeAnnotation:    JobSizeAnnotation,
		ZoneLabel:            ZoneLabel,
		MaxJobSize:           MaxJobSize,
		Topology:             topology.DefaultSettings(),
	}
}

// Validate reports every field that is empty or out of range.
func (s Settings) Validate() error {
	var errs []error
	for _, field := range []struct{ name, value string }{
		{"jobLabel", s.JobLabel}, {"podGroupLabel", s.PodGroupLabel},
		{"zonePolicyAnnotation", s.ZonePolicyAnnotation}, {"jobSizeAnnotation", s.JobSizeAnnotation},
		{"zoneLabel", s.ZoneLabel},
	} {
		if field.value == "" {
			errs = append(errs, fmt.Errorf("%s must not be empty", field.name))
		}
	}
	if s.MaxJobSize < 1 || s.MaxJobSize > JobSizeLimit {
		errs = append(errs, fmt.Errorf("maxJobSize must be 1..%d, got %d", JobSizeLimit, s.MaxJobSize))
	}
	errs = append(errs, s.Topology.Validate())
	return errors.Join(errs...)
}

// Job is a same-zone job as one member pod declares it.
type Job struct {
	// Identity is the job's name (unique within the pod's namespace), where it came
	// from, and the labels selecting its pods.
	Identity
	// Size is the number of pods in the job.
	Size int64
	// SizeFrom is where Size was read from: Settings.JobSizeAnnotation, the controller's
	// annotation (LWSSizeAnnotation), or SizeFromCompletions (the pod's Indexed Job; Size
	// is 0 from DeclaredJob until JobFromPod reads it).
	SizeFrom string
	// Topology is where in the zone's network the members go (package topology).
	Topology topology.Choice
}

// JobFromPod returns the same-zone job the pod belongs to, with its size, or nil for a
// pod with neither the zone-policy nor the job-size annotation: DeclaredJob, then for an
// Indexed Job's pod without the job-size annotation the size from its Job, read through
// owners (IndexedJobSize); with owners nil such a pod gets SizeNotOnPodFormat.
func JobFromPod(pod *v1.Pod, s Settings, owners OwnerJobs) (*Job, error) {
	job, err := DeclaredJob(pod, s)
	if err != nil || job == nil || job.SizeFrom != SizeFromCompletions {
		return job, err
	}
	if owners == nil {
		return nil, errNoOwnerJobs(s)
	}
	size, err := IndexedJobSize(pod, owners, s)
	if err != nil {
		return nil, err
	}
	job.Size = size
	return job, nil
}

// DeclaredJob returns the same-zone job as the pod itself declares it, or nil for a pod
// with neither the zone-policy nor the job-size annotation. Checked in order: the zone
// policy, the job-size annotation, the network topology choice (topology.ParseChoice),
// that a size and then a topology choice come with a zone policy, the job
// (IdentityOf), then the size: the annotation, else the size the job's controller
// writes on the pod (a LeaderWorkerSet group's), else for an Indexed Job size 0 from
// SizeFromCompletions (its Job holds it: JobFromPod reads it), else SizeNotOnPodFormat.
func DeclaredJob(pod *v1.Pod, s Settings) (*Job, error) {
	if pod == nil {
		return nil, errors.New(ReasonMissingPod)
	}
	zonePolicy, hasPolicy := pod.Annotations[s.ZonePolicyAnnotation]
	rawSize, hasSize := pod.Annotations[s.JobSizeAnnotation]
	if hasPolicy && zonePolicy != SameZone {
		return nil, errors.New(ReasonInvalidZonePolicy)
	}
	var size int64
	if hasSize {
		parsed, err := strconv.ParseInt(rawSize, 10, 64)
		if err != nil || parsed < 1 || parsed > s.MaxJobSize {
			return nil, fmt.Errorf(ReasonInvalidJobSizeFormat, s.MaxJobSize)
		}
		size = parsed
	}
	rawTopology, hasTopology := pod.Annotations[s.Topology.Annotation]
	choice, err := topology.ParseChoice(rawTopology, hasTopology, s.Topology)
	if err != nil {
		return nil, err
	}
	switch {
	case !hasPolicy && hasSize:
		return nil, errors.New(ReasonJobSizeWithoutZonePolicy)
	case !hasPolicy && hasTopology:
		return nil, errors.New(topology.ReasonWithoutZonePolicy)
	case !hasPolicy:
		return nil, nil
	}
	identity, err := IdentityOf(pod.Labels, pod.Annotations, s)
	switch {
	case err != nil:
		return nil, err
	case identity == nil && namesPlainJob(pod.Labels):
		return nil, errors.New(ReasonJobNotIndexed)
	case identity == nil:
		return nil, errors.New(ReasonMissingJobName)
	case hasSize:
		return &Job{Identity: *identity, Size: size, SizeFrom: s.JobSizeAnnotation, Topology: choice}, nil
	case identity.Source == SourceIndexedJob:
		return &Job{Identity: *identity, SizeFrom: SizeFromCompletions, Topology: choice}, nil
	}
	size, err = controllerSize(identity, pod.Annotations, s)
	if err != nil {
		return nil, err
	}
	return &Job{Identity: *identity, Size: size, SizeFrom: LWSSizeAnnotation, Topology: choice}, nil
}

// controllerSize is the size the job's controller wrote on the pod (a LeaderWorkerSet
// group's), or why there is none to use.
func controllerSize(identity *Identity, annotations map[string]string, s Settings) (int64, error) {
	raw, ok := annotations[LWSSizeAnnotation]
	if identity.Source != SourceLeaderWorkerSet || !ok {
		if identity.Source == SourceJobLabel {
			return 0, errors.New(ReasonMissingJobSize)
		}
		return 0, fmt.Errorf(SizeNotOnPodFormat, sourceOwner[identity.Source], s.JobSizeAnnotation)
	}
	size, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || size < 1 || size > s.MaxJobSize {
		return 0, fmt.Errorf(InvalidControllerSizeFormat, LWSSizeAnnotation, s.MaxJobSize)
	}
	return size, nil
}

// Plan is the zone chosen for a job, or (Zone empty) the message saying why none was.
type Plan struct {
	Zone    string
	Message string
}

// PlanZone chooses the zone for a whole job of jobSize pods. copies maps each zone to
// how many copies of the job's pod fit there now; a zone in failed (a job recently
// timed out waiting there) is skipped. Of the zones that hold the whole job the
// tightest fit wins (fewest copies), ties broken by zone name; when none does, the
// message lists every zone's count in name order (NoZoneFitsFormat).
func PlanZone(copies map[string]int64, jobSize int64, failed map[string]bool) Plan {
	zones := make([]string, 0, len(copies))
	for zone := range copies {
		zones = append(zones, zone)
	}
	slices.Sort(zones)
	best := ""
	for _, zone := range zones {
		if failed[zone] || copies[zone] < jobSize {
			continue
		}
		if best == "" || copies[zone] < copies[best] {
			best = zone
		}
	}
	if best != "" {
		return Plan{Zone: best}
	}
	parts := make([]string, 0, len(zones))
	for _, zone := range zones {
		part := fmt.Sprintf("%s %d", zone, copies[zone])
		if failed[zone] {
			part += " (" + RecentlyFailed + ")"
		}
		parts = append(parts, part)
	}
	detail := strings.Join(parts, ", ")
	if detail == "" {
		detail = NoZones
	}
	return Plan{Message: fmt.Sprintf(NoZoneFitsFormat, jobSize, detail)}
}
