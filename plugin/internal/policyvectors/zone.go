package policyvectors

import (
	"bytes"
	"encoding/json"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"

	"example.com/gpu-scheduler-eks/plugin/topology"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// ZoneFile is the same-zone job vector file name inside the vector directory.
const ZoneFile = "zone_cases.json"

// ZoneCases is the content of zone_cases.json.
type ZoneCases struct {
	Schema      int                `json:"schema"`
	Description string             `json:"description"`
	Settings    ZoneSettingsFields `json:"settings"`
	Pods        []ZonePodCase      `json:"pods"`
	Members     []ZoneMemberCase   `json:"members"`
	Plans       []ZonePlanCase     `json:"plans"`
	Victims     []ZoneVictimCase   `json:"victims"`
	WholeJobs   []ZoneWholeJobCase `json:"whole_jobs"`
}

// ZoneSettingsFields are the zone policy settings, in the vectors' spelling.
type ZoneSettingsFields struct {
	JobLabel             string `json:"job_label"`
	PodGroupLabel        string `json:"pod_group_label"`
	ZonePolicyAnnotation string `json:"zone_policy_annotation"`
	JobSizeAnnotation    string `json:"job_size_annotation"`
	ZoneLabel            string `json:"zone_label"`
	MaxJobSize           int64  `json:"max_job_size"`
}

// ZonePodCase is a pod and the job it declares, or the policy's error.
type ZonePodCase struct {
	Name             string          `json:"name"`
	Description      string          `json:"description"`
	SettingsOverride json.RawMessage `json:"settings,omitempty"`
	Pod              json.RawMessage `json:"pod"`
	// Jobs are the batch/v1 Jobs the cluster holds: an Indexed Job's size is read from them.
	Jobs   []batchv1.Job `json:"jobs"`
	Expect struct {
		// Job is the declared job; JSON null (or absent with no error) means none.
		Job *struct {
			Name        string            `json:"name"`
			Source      string            `json:"source"`
			NameLabel   string            `json:"name_label"`
			MatchLabels map[string]string `json:"match_labels"`
			Size        int64             `json:"size"`
			SizeFrom    string            `json:"size_from"`
		} `json:"job"`
		Error       *string `json:"error"`
		DecodeError string  `json:"decode_error"`
	} `json:"expect"`
	// Settings are the validated settings of this case; MustLoadZone fills them.
	Settings zonepolicy.Settings `json:"-"`
}

// ZoneMemberCase is a same-zone pod, another pod, and whether the other pod belongs to
// the first one's job (default settings).
type ZoneMemberCase struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Pod         json.RawMessage `json:"pod"`
	Other       json.RawMessage `json:"other"`
	Expect      struct {
		Member bool `json:"member"`
	} `json:"expect"`
}

// ZonePlanCase is a zone plan's input and the zone or message it must give.
type ZonePlanCase struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Copies      map[string]int64 `json:"copies"`
	JobSize     int64            `json:"job_size"`
	Failed      []string         `json:"failed"`
	Expect      struct {
		Zone    string `json:"zone"`
		Message string `json:"message"`
	} `json:"expect"`
}

// ZoneVictimCase is the pods kube-scheduler's preemption chose on one node, the other pods
// the caller sees, the preemptor's priority and the Jobs the cluster holds, with the outcome,
// the victims grown to whole jobs (namespace/name) and how many victims break a job
// (default settings).
type ZoneVictimCase struct {
	Name              string            `json:"name"`
	Description       string            `json:"description"`
	Victims           []json.RawMessage `json:"victims"`
	Pods              []json.RawMessage `json:"pods"`
	PreemptorPriority int32             `json:"preemptor_priority"`
	Jobs              []batchv1.Job     `json:"jobs"`
	Expect            struct {
		Outcome string   `json:"outcome"`
		Victims []string `json:"victims"`
		Broken  int      `json:"broken"`
	} `json:"expect"`
}

// OwnerJobs looks the case's Jobs up by namespace and name.
func (c ZoneVictimCase) OwnerJobs(namespace, name string) *batchv1.Job {
	return findJob(c.Jobs, namespace, name)
}

// ZoneWholeJobCase is one zone's nodes (their free resources, quantities; "pods" is free pod
// slots), a job's members (their requests and, per node in order, whether the member may use
// it) and how many of the members the zone holds at once.
type ZoneWholeJobCase struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	GPUResource string            `json:"gpu_resource"`
	Nodes       []v1.ResourceList `json:"nodes"`
	Members     []struct {
		Requests v1.ResourceList `json:"requests"`
		Admitted []bool          `json:"admitted"`
	} `json:"members"`
	Expect struct {
		Count int64 `json:"count"`
	} `json:"expect"`
}

// MustLoadZone loads zone_cases.json (each pod case with its settings) for a test.
func MustLoadZone(t testing.TB) ZoneCases {
	t.Helper()
	var file ZoneCases
	mustLoadFile(t, ZoneFile, &file)
	for i := range file.Pods {
		c := &file.Pods[i]
		fields := file.Settings
		if len(c.SettingsOverride) > 0 {
			if err := strictDecode(c.SettingsOverride, &fields); err != nil {
				t.Fatalf("%s: case %q: settings: %v", ZoneFile, c.Name, err)
			}
		}
		c.Settings = zonepolicy.Settings{
			JobLabel: fields.JobLabel, PodGroupLabel: fields.PodGroupLabel,
			ZonePolicyAnnotation: fields.ZonePolicyAnnotation, JobSizeAnnotation: fields.JobSizeAnnotation,
			ZoneLabel: fields.ZoneLabel, MaxJobSize: fields.MaxJobSize,
			Topology: topology.DefaultSettings(),
		}
		if err := c.Settings.Validate(); err != nil {
			t.Fatalf("%s: case %q: settings: %v", ZoneFile, c.Name, err)
		}
	}
	return file
}

// OwnerJobs looks a case's Jobs up by namespace and name, as the plugin's informer does.
func (c ZonePodCase) OwnerJobs(namespace, name string) *batchv1.Job {
	return findJob(c.Jobs, namespace, name)
}

func findJob(jobs []batchv1.Job, namespace, name string) *batchv1.Job {
	for i := range jobs {
		if jobs[i].Namespace == namespace && jobs[i].Name == name {
			return &jobs[i]
		}
	}
	return nil
}

// strictDecode decodes raw into into, refusing unknown fields.
func strictDecode(raw json.RawMessage, into any) error {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	return decoder.Decode(into)
}
