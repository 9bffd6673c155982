package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/capacitytype"
	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/gpuscheduler"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
	"example.com/gpu-scheduler-eks/plugin/jobzone"
)

// pluginModeProfile is the plugin-mode profile the project deploys: upstream
// defaults plus the plugins block rendered by render/scheduler_config.py
// (tests/vectors/plugin_mode_plugins.yaml, the first %s, indented by four spaces).
// The second %s is extra profile YAML (pluginConfig), indented by two spaces.
const pluginModeProfile = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
profiles:
- schedulerName: custom-scheduler
  plugins:
%s
%s`

// renderedPlugins is the shared plugins block, indented for pluginModeProfile.
func renderedPlugins(t *testing.T) string {
	return sharedYAML(t, "plugin_mode_plugins.yaml", "    ")
}

// sharedYAML is a YAML file of tests/vectors without its comments, each line indented.
func sharedYAML(t *testing.T, name, indent string) string {
	t.Helper()
	dir, err := policyvectors.Dir()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(string(text), "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, indent+line)
		}
	}
	return strings.Join(lines, "\n")
}

// setupScheduler builds (without running) the scheduler the binary would run with
// this configuration, against a stand-in API server that answers every request.
func setupScheduler(t *testing.T, profileExtra string) (*scheduler.Scheduler, error) {
	t.Helper()
	dir := t.TempDir()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(server.Close)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster: {insecure-skip-tls-verify: true, server: %q}
  name: local
contexts:
- context: {cluster: local, user: local}
  name: local
current-context: local
users:
- name: local
  user: {username: test}
`, server.URL))
	configFile := filepath.Join(dir, "config.yaml")
	writeFile(t, configFile, fmt.Sprintf(pluginModeProfile, kubeconfig, renderedPlugins(t), profileExtra))

	opts := options.NewOptions()
	flags := pflag.NewFlagSet("gpu-scheduler", pflag.ContinueOnError)
	for _, set := range opts.Flags.FlagSets {
		flags.AddFlagSet(set)
	}
	if err := flags.Parse([]string{"--config", configFile}); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = listener.Close() })
	opts.SecureServing.Listener = listener

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, sched, err := app.Setup(ctx, opts, registryOptions()...)
	return sched, err
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPluginModeConfiguration loads the deployed profile shape into the real
// scheduler: GPUScheduler must be registered, enabled where the profile says, take
// its pluginConfig args, and reject a node with the policy's reason alongside the
// upstream filters.
func TestPluginModeConfiguration(t *testing.T) {
	sched, err := setupScheduler(t, `  pluginConfig:
  - name: GPUScheduler
    args:
      minMemoryAnnotation: example.org/min-vram-mib
`)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	profile, ok := sched.Profiles["custom-scheduler"]
	if !ok {
		t.Fatalf("no custom-scheduler profile")
	}
	plugins := profile.ListPlugins()
	// First at preFilter and filter: a too-small GPU is refused before the upstream filters run.
	for point, enabled := range map[string][]config.Plugin{"preFilter": plugins.PreFilter.Enabled, "filter": plugins.Filter.Enabled} {
		if len(enabled) < 2 || enabled[0].Name != gpuscheduler.Name || hasPlugin(enabled[1:], gpuscheduler.Name, 0) {
			t.Errorf("GPUScheduler must run first, once, at %s: %v", point, enabled)
		}
	}
	if !hasPlugin(plugins.Score.Enabled, gpuscheduler.Name, 10) {
		t.Errorf("GPUScheduler not enabled for score with weight 10: %v", plugins.Score.Enabled)
	}
	for point, enabled := range map[string][]config.Plugin{"preFilter": plugins.PreFilter.Enabled, "reserve": plugins.Reserve.Enabled, "permit": plugins.Permit.Enabled} {
		if !hasPlugin(enabled, jobzone.Name, 0) {
			t.Errorf("JobZone not enabled at %s: %v", point, enabled)
		}
	}
	// JobZone is the profile's preemption (DefaultPreemption with its victim rule), so
	// DefaultPreemption itself must not run after it without that rule.
	if enabled := plugins.PostFilter.Enabled; len(enabled) == 0 || enabled[0].Name != jobzone.Name || hasPlugin(enabled, "DefaultPreemption", 0) {
		t.Errorf("JobZone must run first at postFilter, and DefaultPreemption not at all: %v", enabled)
	}
	if enabled := plugins.PreEnqueue.Enabled; !hasPlugin(enabled, jobzone.Name, 0) || hasPlugin(enabled, "DefaultPreemption", 0) {
		t.Errorf("JobZone's PreEnqueue must gate pods whose preemption is under way, in DefaultPreemption's place: %v", enabled)
	}
	if enabled := plugins.QueueSort.Enabled; len(enabled) != 1 || enabled[0].Name != jobzone.Name {
		t.Errorf("JobZone must be the only queueSort: %v", enabled)
	}
	if !hasPlugin(plugins.Filter.Enabled, "NodeResourcesFit", 0) {
		t.Errorf("the upstream filters must stay enabled: %v", plugins.Filter.Enabled)
	}

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-train",
			Annotations: map[string]string{"example.org/min-vram-mib": "40960"}},
		Spec: v1.PodSpec{SchedulerName: "custom-scheduler", Containers: []v1.Container{{
			Name: "train", Image: "busybox:1.37.0",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("100m"), gpupolicy.GPUResource: resource.MustParse("1"),
			}},
		}}},
	}
	ctx := context.Background()
	for _, tt := range []struct {
		memory string
		want   string
	}{{"22888", gpupolicy.ReasonBelowMinimum}, {"45776", ""}} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-" + tt.memory, Labels: map[string]string{
			"kubernetes.io/hostname": "gpu-" + tt.memory, gpupolicy.NodeMemoryLabel: tt.memory,
		}}}
		node.Status.Allocatable = v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"),
			v1.ResourcePods: resource.MustParse("110"), gpupolicy.GPUResource: resource.MustParse("1"),
		}
		status := filterStatus(ctx, t, profile, pod, node)
		switch {
		case tt.want == "" && !status.IsSuccess():
			t.Errorf("node %s: filters rejected it: %v", tt.memory, status)
		case tt.want != "" && (status.IsSuccess() || status.Plugin() != gpuscheduler.Name || status.Message() != tt.want):
			t.Errorf("node %s: filter status %v from %q, want %q from GPUScheduler", tt.memory, status, status.Plugin(), tt.want)
		}
	}
}

// filterStatus runs the profile's PreFilter and Filter plugins for pod on node.
func filterStatus(ctx context.Context, t *testing.T, profile framework.Framework, pod *v1.Pod, node *v1.Node) *fwk.Status {
	t.Helper()
	info := framework.NewNodeInfo()
	info.SetNode(node)
	state := framework.NewCycleState()
	if _, status, _ := profile.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
		t.Fatalf("PreFilter plugins: %v", status)
	}
	return profile.RunFilterPlugins(ctx, state, pod, info)
}

func hasPlugin(plugins []config.Plugin, name string, weight int32) bool {
	for _, p := range plugins {
		if p.Name == name && (weight == 0 || p.Weight == weight) {
			return true
		}
	}
	return false
}

// TestScoringStrategyArg: the pluginConfig the renderer writes for best-fit
// (tests/vectors/plugin_mode_plugin_config.yaml) reaches the plugin the real
// scheduler builds: a 16 GiB pod's GPUScheduler score is then highest on the
// smallest GPU that fits, where the default prefers the largest.
func TestScoringStrategyArg(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-train",
			Annotations: map[string]string{gpupolicy.MinMemoryAnnotation: "16384"}},
		Spec: v1.PodSpec{SchedulerName: "custom-scheduler", Containers: []v1.Container{{
			Name: "train", Image: "busybox:1.37.0",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{gpupolicy.GPUResource: resource.MustParse("1")}},
		}}},
	}
	var nodes []fwk.NodeInfo
	for _, memory := range []string{"16384", "144384"} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-" + memory, Labels: map[string]string{
			"kubernetes.io/hostname": "gpu-" + memory, gpupolicy.NodeMemoryLabel: memory,
		}}}
		node.Status.Allocatable = v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"),
			v1.ResourcePods: resource.MustParse("110"), gpupolicy.GPUResource: resource.MustParse("1"),
		}
		info := framework.NewNodeInfo()
		info.SetNode(node)
		nodes = append(nodes, info)
	}
	for _, tt := range []struct {
		extra string
		want  []int64 // GPUScheduler's weighted score on the T4-sized node, then the H200-sized one
	}{
		{"", []int64{200, 1000}},
		{"  pluginConfig:\n" + sharedYAML(t, "plugin_mode_plugin_config.yaml", "  ") + "\n", []int64{1000, 390}},
	} {
		sched, err := setupScheduler(t, tt.extra)
		if err != nil {
			t.Fatalf("Setup: %v", err)
		}
		profile := sched.Profiles["custom-scheduler"]
		ctx := context.Background()
		state := framework.NewCycleState()
		if _, status, _ := profile.RunPreFilterPlugins(ctx, state, pod); !status.IsSuccess() {
			t.Fatalf("PreFilter plugins: %v", status)
		}
		if status := profile.RunPreScorePlugins(ctx, state, pod, nodes); !status.IsSuccess() {
			t.Fatalf("PreScore plugins: %v", status)
		}
		scores, status := profile.RunScorePlugins(ctx, state, pod, nodes)
		if !status.IsSuccess() {
			t.Fatalf("Score plugins: %v", status)
		}
		var got []int64
		for _, node := range scores {
			for _, score := range node.Scores {
				if score.Name == gpuscheduler.Name {
					got = append(got, score.Score)
				}
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("args %q: GPUScheduler scores %v, want %v", tt.extra, got, tt.want)
		}
	}
}

// TestBadPluginArgsStopTheScheduler: a typo in the args is a start-up error that
// names the plugin and the field, not a silently ignored setting.
func TestBadPluginArgsStopTheScheduler(t *testing.T) {
	_, err := setupScheduler(t, `  pluginConfig:
  - name: GPUScheduler
    args:
      scoreScaleMib: 40960
`)
	if err == nil || !strings.Contains(err.Error(), "GPUScheduler args") || !strings.Contains(err.Error(), "scoreScaleMib") {
		t.Fatalf("Setup error = %v, want one naming GPUScheduler args and the field", err)
	}
	_, err = setupScheduler(t, `  pluginConfig:
  - name: GPUScheduler
    args:
      scoringStrategy: smallest
`)
	if err == nil || !strings.Contains(err.Error(), "GPUScheduler args") || !strings.Contains(err.Error(), `scoringStrategy must be prefer-larger or best-fit, got "smallest"`) {
		t.Fatalf("Setup error = %v, want one naming GPUScheduler args and scoringStrategy", err)
	}
	_, err = setupScheduler(t, `  pluginConfig:
  - name: JobZone
    args:
      permitTimeout: 16m
`)
	if err == nil || !strings.Contains(err.Error(), "JobZone args") || !strings.Contains(err.Error(), "permitTimeout must be more than 0 and at most 15m0s") {
		t.Fatalf("Setup error = %v, want one naming JobZone args and permitTimeout", err)
	}
}

// TestCapacityTypeInPluginModeProfile loads the deployed profile into the real
// scheduler: CapacityType must run right after GPUScheduler at preFilter and filter,
// score with weight 20, and reject with the policy's reason a spot node for an
// on-demand pod and a node being taken away for a pod that tolerates every taint,
// while the same pod passes every filter on a ready on-demand node.
func TestCapacityTypeInPluginModeProfile(t *testing.T) {
	sched, err := setupScheduler(t, "")
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	profile := sched.Profiles["custom-scheduler"]
	plugins := profile.ListPlugins()
	for point, enabled := range map[string][]config.Plugin{"preFilter": plugins.PreFilter.Enabled, "filter": plugins.Filter.Enabled} {
		if len(enabled) < 3 || enabled[1].Name != capacitytype.Name || hasPlugin(enabled[2:], capacitytype.Name, 0) {
			t.Errorf("CapacityType must run second, once, at %s: %v", point, enabled)
		}
	}
	if !hasPlugin(plugins.Score.Enabled, capacitytype.Name, 20) || !hasPlugin(plugins.PreScore.Enabled, capacitytype.Name, 0) {
		t.Errorf("CapacityType not enabled for preScore and score with weight 20: %v / %v", plugins.PreScore.Enabled, plugins.Score.Enabled)
	}

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-train",
			Annotations: map[string]string{gpupolicy.CapacityTypeAnnotation: "on-demand"}},
		Spec: v1.PodSpec{SchedulerName: "custom-scheduler",
			Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
			Containers: []v1.Container{{Name: "train", Image: "busybox:1.37.0",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name, capacity, taint, want string
	}{
		{"spot", "SPOT", "", gpupolicy.ReasonNotOnDemand},
		{"disrupted", "ON_DEMAND", "karpenter.sh/disrupted", gpupolicy.ReasonNodeBeingRemoved},
		{"on-demand", "ON_DEMAND", "", ""},
	} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Labels: map[string]string{
			"kubernetes.io/hostname": tt.name, gpupolicy.EKSCapacityTypeLabel: tt.capacity,
		}}}
		if tt.taint != "" {
			node.Spec.Taints = []v1.Taint{{Key: tt.taint, Effect: v1.TaintEffectNoSchedule}}
		}
		node.Status.Allocatable = v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110"),
		}
		status := filterStatus(ctx, t, profile, pod, node)
		switch {
		case tt.want == "" && !status.IsSuccess():
			t.Errorf("node %s: filters rejected it: %v", tt.name, status)
		case tt.want != "" && (status.IsSuccess() || status.Plugin() != capacitytype.Name || status.Message() != tt.want):
			t.Errorf("node %s: filter status %v from %q, want %q from CapacityType", tt.name, status, status.Plugin(), tt.want)
		}
	}
}
