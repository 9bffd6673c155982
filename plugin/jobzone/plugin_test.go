package jobzone

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// sixVersusEight is the cluster: zone a has 6 free GPUs (two nodes, two GPUs
// taken on one), zone b 8 (one node), zone c 2.
func sixVersusEight() ([]*v1.Pod, []*v1.Node) {
	nodes := []*v1.Node{gpuNode("a1", "us-east-1a", 4), gpuNode("a2", "us-east-1a", 4), gpuNode("b1", "us-east-1b", 8), gpuNode("c1", "us-east-1c", 2), gpuNode("nozone", "", 8)}
	return []*v1.Pod{filler("busy", "a2", 2)}, nodes
}

func TestPreFilterPlansTheZoneThatHoldsTheWholeJob(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	result, status := h.preFilter(member("llm", 0, 8, ""))
	if !status.IsSuccess() {
		t.Fatalf("status %v", status)
	}
	if !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("nodes %v, want only zone b's", result.NodeNames)
	}
	// A job of 2 fits every zone: the tightest fit, c, wins.
	result, _ = h.preFilter(member("small", 0, 2, ""))
	if !result.NodeNames.Equal(sets.New("c1")) {
		t.Fatalf("job of 2: nodes %v, want zone c's", result.NodeNames)
	}
}

// TestPreFilterPlansWhereTheJobsExtendedResourcesAre is the EFA job: zone a sorts first and
// has the same free GPUs, but only zone b's nodes have EFA interfaces. Counting GPUs alone
// planned a, where NodeResourcesFit refuses every member, so the job never reached Permit
// and stayed Pending with no timeout to move it.
func TestPreFilterPlansWhereTheJobsExtendedResourcesAre(t *testing.T) {
	h := newHarness(t, nil)
	withEFA := gpuNode("b1", "us-east-1b", 8)
	withEFA.Status.Allocatable[efa] = *newQuantity("32")
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "us-east-1a", 8), withEFA})
	pod := member("efa", 0, 8, "")
	pod.Spec.Containers[0].Resources.Requests[efa] = *newQuantity("4")
	result, status := h.preFilter(pod)
	if !status.IsSuccess() {
		t.Fatalf("status %v", status)
	}
	if !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("nodes %v, want zone b's, the only one with EFA", result.NodeNames)
	}
}

func TestPreFilterNoZoneHoldsTheJob(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	_, status := h.preFilter(member("llm", 0, 9, ""))
	want := zonepolicy.PlanZone(map[string]int64{"us-east-1a": 6, "us-east-1b": 8, "us-east-1c": 2}, 9, nil).Message
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("status %v, want UnschedulableAndUnresolvable %q", status, want)
	}
	if !strings.Contains(want, "us-east-1a 6, us-east-1b 8, us-east-1c 2") {
		t.Fatalf("the message does not give every zone's count: %q", want)
	}
}

func TestPreFilterFollowsPlacedMembers(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	// A member already assumed in zone a keeps the job there, though a alone does not hold 8.
	h.lister.set(append(pods, member("llm", 0, 8, "a1"), member("other", 0, 8, "b1")), nodes)
	result, status := h.preFilter(member("llm", 1, 8, ""))
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("a1", "a2")) {
		t.Fatalf("nodes %v status %v, want zone a's nodes", result, status)
	}
	// The same job name in another namespace is another job.
	// (a has 5 free GPUs now and b 7: a job of 7 there is planned in b.)
	elsewhere := member("llm", 1, 7, "")
	elsewhere.Namespace = "research"
	if result, status := h.preFilter(elsewhere); !status.IsSuccess() || !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("another namespace's job: %v %v, want zone b's nodes", result, status)
	}
}

func TestPreFilterSkipsPodsOutsideJobsAndRefusesInvalidOnes(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	plain := filler("plain", "", 1)
	if _, status := h.preFilter(plain); status.Code() != fwk.Skip {
		t.Fatalf("a pod in no job: %v, want Skip", status)
	}
	bad := member("llm", 0, 8, "")
	bad.Annotations[zonepolicy.JobSizeAnnotation] = "0"
	_, status := h.preFilter(bad)
	want := fmt.Sprintf(zonepolicy.ReasonInvalidJobSizeFormat, zonepolicy.MaxJobSize)
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("invalid job size: %v, want %q", status, want)
	}
}

// efa is the AWS EFA device plugin's extended resource.
const efa v1.ResourceName = "vpc.amazonaws.com/efa"

func TestCopiesOn(t *testing.T) {
	c, err := configFromArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	gpu := c.gpu
	capacity := func(node, pod string) func(*v1.Node, *v1.Pod) {
		return func(n *v1.Node, p *v1.Pod) {
			n.Labels[gpupolicy.CapacityTypeLabel] = node
			p.Annotations[gpupolicy.CapacityTypeAnnotation] = pod
		}
	}
	logger := klog.Background()
	pod := member("llm", 0, 8, "")
	tests := []struct {
		name   string
		change func(*v1.Node, *v1.Pod)
		want   int64
	}{
		{"free GPUs", func(*v1.Node, *v1.Pod) {}, 8},
		{"two GPUs a copy", func(_ *v1.Node, p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[gpu.GPUResource] = *newQuantity("2")
		}, 4},
		{"CPU is shorter", func(_ *v1.Node, p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = *newQuantity("40")
		}, 2},
		{"cordoned", func(n *v1.Node, _ *v1.Pod) { n.Spec.Unschedulable = true }, 0},
		{"cordoned, the pod tolerating everything", func(n *v1.Node, p *v1.Pod) {
			n.Spec.Unschedulable = true
			p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
		}, 0},
		{"being deleted, no capacity choice", func(n *v1.Node, _ *v1.Pod) { n.DeletionTimestamp = &metav1.Time{} }, 0},
		{"disruption taint tolerated, no capacity choice", func(n *v1.Node, p *v1.Pod) {
			n.Spec.Taints = []v1.Taint{{Key: "karpenter.sh/disrupted", Effect: v1.TaintEffectNoSchedule}}
			p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
		}, 0},
		{"untolerated taint", func(n *v1.Node, _ *v1.Pod) {
			n.Spec.Taints = []v1.Taint{{Key: "nvidia.com/gpu", Effect: v1.TaintEffectNoSchedule}}
		}, 0},
		{"tolerated taint", func(n *v1.Node, p *v1.Pod) {
			n.Spec.Taints = []v1.Taint{{Key: "nvidia.com/gpu", Effect: v1.TaintEffectNoSchedule}}
			p.Spec.Tolerations = []v1.Toleration{{Key: "nvidia.com/gpu", Operator: v1.TolerationOpExists}}
		}, 8},
		{"PreferNoSchedule taint", func(n *v1.Node, _ *v1.Pod) {
			n.Spec.Taints = []v1.Taint{{Key: "x", Effect: v1.TaintEffectPreferNoSchedule}}
		}, 8},
		{"node selector mismatch", func(_ *v1.Node, p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "other"} }, 0},
		{"GPU memory below minimum", func(n *v1.Node, _ *v1.Pod) { n.Labels[gpupolicy.NodeMemoryLabel] = "22888" }, 0},
		{"GPU memory from Karpenter's label", func(n *v1.Node, _ *v1.Pod) {
			delete(n.Labels, gpupolicy.NodeMemoryLabel)
			n.Labels[gpupolicy.KarpenterGPUMemoryLabel] = "81920"
		}, 8},
		{"Karpenter's label below minimum", func(n *v1.Node, _ *v1.Pod) {
			delete(n.Labels, gpupolicy.NodeMemoryLabel)
			n.Labels[gpupolicy.KarpenterGPUMemoryLabel] = "22888"
		}, 0},
		{"an instance type not in the table", func(n *v1.Node, _ *v1.Pod) {
			delete(n.Labels, gpupolicy.NodeMemoryLabel)
			n.Labels[gpupolicy.InstanceTypeLabel] = "p5.48xlarge"
		}, 0},
		{"invalid GPU-memory annotation", func(_ *v1.Node, p *v1.Pod) { p.Annotations[gpupolicy.MinMemoryAnnotation] = "x" }, 0},
		{"pod slots", func(n *v1.Node, _ *v1.Pod) { n.Status.Allocatable[v1.ResourcePods] = *newQuantity("3") }, 2},
		{"EFA requested, the node has none", func(_ *v1.Node, p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[efa] = *newQuantity("1")
		}, 0},
		{"EFA requested, the node has 4", func(n *v1.Node, p *v1.Pod) {
			n.Status.Allocatable[efa] = *newQuantity("4")
			p.Spec.Containers[0].Resources.Requests[efa] = *newQuantity("1")
		}, 4},
		{"hugepages are shorter", func(n *v1.Node, p *v1.Pod) {
			n.Status.Allocatable["hugepages-2Mi"] = *newQuantity("1Gi")
			p.Spec.Containers[0].Resources.Requests["hugepages-2Mi"] = *newQuantity("256Mi")
		}, 4},
		{"ephemeral storage is shorter", func(n *v1.Node, p *v1.Pod) {
			n.Status.Allocatable[v1.ResourceEphemeralStorage] = *newQuantity("100Gi")
			p.Spec.Containers[0].Resources.Requests[v1.ResourceEphemeralStorage] = *newQuantity("40Gi")
		}, 2},
		{"spot required, on-demand node", capacity("on-demand", "spot"), 0},
		{"spot required, spot node", capacity("spot", "spot"), 8},
		{"on-demand preferred, spot node", capacity("spot", "prefer-on-demand"), 8},
		{"invalid capacity-type choice", capacity("spot", "Spot"), 0},
		{"spot node being reclaimed", func(n *v1.Node, p *v1.Pod) {
			capacity("spot", "prefer-spot")(n, p)
			n.Spec.Taints = []v1.Taint{{Key: gpupolicy.DisruptionTaints[0], Effect: v1.TaintEffectPreferNoSchedule}}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, p := gpuNode("n", "z", 8), pod.DeepCopy()
			tt.change(node, p)
			info := framework.NewNodeInfo(filler("running", "n", 0))
			info.SetNode(node)
			if got := newPodShape(p, c).copiesOn(logger, info, c); got != tt.want {
				t.Fatalf("copies = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPermitHoldsMembersUntilTheWholeJobIsPlaced(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second, third := member("llm", 0, 3, ""), member("llm", 1, 3, ""), member("llm", 2, 3, "")
	if status := h.permit(first, "b1"); status.Code() != fwk.Wait {
		t.Fatalf("first member: %v, want Wait", status)
	}
	firstDone := h.waitResult(first)
	// The scheduler's cache now holds the first member, assumed on b1.
	h.lister.set(append(pods, member("llm", 0, 3, "b1")), nodes)
	if status := h.permit(second, "b1"); status.Code() != fwk.Wait {
		t.Fatalf("second member: %v, want Wait", status)
	}
	secondDone := h.waitResult(second)
	h.lister.set(append(pods, member("llm", 0, 3, "b1"), member("llm", 1, 3, "b1")), nodes)
	if status := h.permit(third, "b1"); !status.IsSuccess() {
		t.Fatalf("third member: %v, want Success", status)
	}
	for what, done := range map[string]<-chan *fwk.Status{"first": firstDone, "second": secondDone} {
		if status := receive(t, what, done); !status.IsSuccess() {
			t.Errorf("%s member: %v, want allowed", what, status)
		}
	}
	// A pod in no job is never held.
	if status := h.permit(filler("plain", "", 1), "b1"); !status.IsSuccess() {
		t.Fatalf("a pod in no job: %v", status)
	}
}

func TestPermitWaitsOnlyUntilTheJobsDeadline(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first := member("llm", 0, 3, "")
	state := framework.NewCycleState()
	status, wait := h.plugin.Permit(context.Background(), state, first, "b1")
	// The framework's own timer is set past the deadline: JobZone ends the hold at the deadline.
	if status.Code() != fwk.Wait || wait != DefaultPermitTimeout+deadlineGrace {
		t.Fatalf("first member: %v for %s, want Wait for %s", status, wait, DefaultPermitTimeout+deadlineGrace)
	}
	if want := fmt.Sprintf(WaitingFormat, 1, 3, "ml/llm", "us-east-1b"); status.Message() != want {
		t.Fatalf("message %q, want %q", status.Message(), want)
	}
	h.clock.Step(10 * time.Minute)
	h.lister.set(append(pods, member("llm", 0, 3, "b1")), nodes)
	_, wait = h.plugin.Permit(context.Background(), state, member("llm", 1, 3, ""), "b1")
	if wait != DefaultPermitTimeout-10*time.Minute+deadlineGrace {
		t.Fatalf("a later member waits %s, want the %s left of the job's", wait, DefaultPermitTimeout-10*time.Minute+deadlineGrace)
	}
}

func TestTimeoutRejectsEveryHeldMemberAndSkipsTheZone(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	nodes = append(nodes, gpuNode("c2", "us-east-1c", 8)) // zone c: 10 free, b: 8 (tighter for a job of 8)
	h.lister.set(pods, nodes)
	first, second := member("llm", 0, 8, ""), member("llm", 1, 8, "")
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("plan %v, want zone b", result.NodeNames)
	}
	h.permit(first, "b1")
	firstDone := h.waitResult(first)
	h.lister.set(append(pods, member("llm", 0, 8, "b1")), nodes)
	h.permit(second, "b1")
	secondDone := h.waitResult(second)

	// The job's time runs out: JobZone's timer rejects both held members at once, and the
	// scheduler unreserves the first.
	h.clock.Step(DefaultPermitTimeout)
	want := fmt.Sprintf(TimedOutFormat, "ml/llm", 8, "us-east-1b", DefaultPermitTimeout, DefaultFailedZoneDuration)
	for what, done := range map[string]<-chan *fwk.Status{"first": firstDone, "second": secondDone} {
		if status := receive(t, what, done); status.IsSuccess() || !strings.Contains(status.Message(), want) {
			t.Fatalf("%s member: %v, want rejected with %q", what, status, want)
		}
	}
	h.unreserve(first, "b1")
	// Before the scheduler has unreserved the second member, it is still assumed in b: a
	// member planned now must not follow it there.
	h.lister.set(append(pods, member("llm", 1, 8, "b1")), nodes)
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("c1", "c2")) {
		t.Fatalf("plan beside a member being given up: %v, want zone c", result.NodeNames)
	}
	h.unreserve(second, "b1")

	// Planned again: zone b is skipped, c holds the job.
	h.lister.set(pods, nodes)
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("c1", "c2")) {
		t.Fatalf("replan %v, want zone c", result.NodeNames)
	}
	// Another job is not affected by this job's failure (and its plan holds b's GPUs).
	if result, _ := h.preFilter(member("other", 0, 8, "")); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("another job's plan %v, want zone b", result.NodeNames)
	}
	// When the failure expires, and the other job's plan lapsed with none of its members
	// waiting, b is the tightest fit again.
	h.clock.Step(max(DefaultFailedZoneDuration, DefaultPermitTimeout))
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("after the failure expired: %v, want zone b", result.NodeNames)
	}
}

func TestUnreserveBeforeTheDeadlineRejectsButKeepsTheZone(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first, second := member("llm", 0, 8, ""), member("llm", 1, 8, "")
	h.permit(first, "b1")
	firstDone := h.waitResult(first)
	h.lister.set(append(pods, member("llm", 0, 8, "b1")), nodes)
	// The second member fails after Reserve for another reason (another plugin, a bind error).
	h.unreserve(second, "b1")
	status := receive(t, "first", firstDone)
	if want := fmt.Sprintf(MemberUnreservedFormat, "ml/llm", "ml/llm-1"); status.IsSuccess() || !strings.Contains(status.Message(), want) {
		t.Fatalf("first member: %v, want rejected with %q", status, want)
	}
	h.unreserve(first, "b1") // idempotent: the gang is gone
	h.lister.set(pods, nodes)
	if result, _ := h.preFilter(first); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("replan %v, want zone b still", result.NodeNames)
	}
}

func TestSignPod(t *testing.T) {
	h := newHarness(t, nil)
	if fragments, status := h.plugin.SignPod(context.Background(), filler("plain", "", 1)); !status.IsSuccess() || len(fragments) != 0 {
		t.Fatalf("a pod in no job: %v %v, want signed with nothing", fragments, status)
	}
	if _, status := h.plugin.SignPod(context.Background(), member("llm", 0, 8, "")); status.Code() != fwk.Unschedulable {
		t.Fatalf("a job member: %v, want unsigned", status)
	}
}

func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		name, raw, err string
		check          func(config) bool
	}{
		{"defaults", "", "", func(c config) bool {
			return c.permitTimeout == DefaultPermitTimeout && c.failedZoneDuration == DefaultFailedZoneDuration && c.zone == zonepolicy.DefaultSettings()
		}},
		{"overrides", `{"permitTimeout":"20s","failedZoneDuration":"1m","maxJobSize":16,"zoneLabel":"topology.k8s.aws/zone-id","gpuResource":"amd.com/gpu"}`, "", func(c config) bool {
			return c.permitTimeout == 20*time.Second && c.failedZoneDuration == time.Minute && c.zone.MaxJobSize == 16 &&
				c.zone.ZoneLabel == "topology.k8s.aws/zone-id" && c.gpu.GPUResource == "amd.com/gpu"
		}},
		{"GPU memory read as GPUScheduler reads it", `{"vendorMemoryLabels":["nvidia.com/gpu.memory"],"instanceTypeGPUMemoryMiB":{"g5.xlarge":22888}}`, "", func(c config) bool {
			return slices.Equal(c.gpu.VendorMemoryLabels, []string{gpupolicy.GFDGPUMemoryLabel}) && maps.Equal(c.gpu.InstanceTypeGPUMemoryMiB, map[string]int64{"g5.xlarge": 22888})
		}},
		{"GPU memory schemes by default", "", "", func(c config) bool {
			return slices.Equal(c.gpu.VendorMemoryLabels, gpupolicy.VendorMemoryLabels()) && len(c.gpu.InstanceTypeGPUMemoryMiB) == 0
		}},
		{"table entry out of range", `{"instanceTypeGPUMemoryMiB":{"g5.xlarge":2000000}}`, `instanceTypeGPUMemoryMiB["g5.xlarge"] must be 1..1048576`, nil},
		{"capacity type as CapacityType reads it", `{"capacityTypeAnnotation":"example.org/capacity","capacityTypeNodeLabel":"example.org/lifecycle","defaultCapacityChoice":"spot"}`, "", func(c config) bool {
			return c.capacity == gpupolicy.CapacitySettings{Annotation: "example.org/capacity", NodeLabel: "example.org/lifecycle", DefaultChoice: gpupolicy.RequireSpot}
		}},
		{"unknown default capacity choice", `{"defaultCapacityChoice":"SPOT"}`, "defaultChoice must be", nil},
		{"unknown field", `{"permitTimeOut":"20s"}`, `unknown field "permitTimeOut"`, nil},
		{"zero timeout", `{"permitTimeout":"0s"}`, "permitTimeout must be more than 0 and at most 15m0s, got 0s", nil},
		{"beyond the framework's cap", `{"permitTimeout":"16m"}`, "permitTimeout must be more than 0 and at most 15m0s, got 16m0s", nil},
		{"failed zone duration", `{"failedZoneDuration":"25h"}`, "failedZoneDuration must be more than 0 and at most 24h0m0s", nil},
		{"empty key", `{"jobLabel":""}`, "jobLabel must not be empty", nil},
		{"max job size", `{"maxJobSize":0}`, "maxJobSize must be 1..1000000", nil},
		{"preemption at DefaultPreemption's defaults", "", "", func(c config) bool {
			return c.preemption.MinCandidateNodesPercentage == 10 && c.preemption.MinCandidateNodesAbsolute == 100
		}},
		{"preemption limits", `{"minCandidateNodesPercentage":0,"minCandidateNodesAbsolute":20}`, "", func(c config) bool {
			return c.preemption.MinCandidateNodesPercentage == 0 && c.preemption.MinCandidateNodesAbsolute == 20
		}},
		{"preemption percentage", `{"minCandidateNodesPercentage":101}`, "minCandidateNodesPercentage: Invalid value: 101", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var obj runtime.Object
			if tt.raw != "" {
				obj = &runtime.Unknown{Raw: []byte(tt.raw), ContentType: runtime.ContentTypeJSON}
			}
			c, err := configFromArgs(obj)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), Name+" args: ") {
					t.Fatalf("error %v, want one naming %q", err, tt.err)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("config %+v, error %v", c, err)
			}
		})
	}
	if _, err := New(context.Background(), nil, nil); err == nil {
		t.Fatal("New accepted a nil handle")
	}
}

func TestFilterRefusesNodesOutsideTheJobsZone(t *testing.T) {
	h := newHarness(t, nil)
	h.lister.set(sixVersusEight())
	nodes, err := h.lister.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]fwk.NodeInfo{}
	for _, info := range nodes {
		byName[info.Node().Name] = info
	}
	pod := member("llm", 0, 8, "")
	state := framework.NewCycleState()
	if _, status := h.plugin.PreFilter(context.Background(), state, pod, nodes); !status.IsSuccess() {
		t.Fatalf("PreFilter: %v", status)
	}
	// Planned in b: a1 (say, a stale nomination) is refused, b1 passes.
	status := h.plugin.Filter(context.Background(), state, pod, byName["a1"])
	want := fmt.Sprintf(OutsideZoneFormat, "us-east-1b", "ml/llm")
	if status.Code() != fwk.UnschedulableAndUnresolvable || status.Message() != want {
		t.Fatalf("a1: status %v, want UnschedulableAndUnresolvable %q", status, want)
	}
	if status := h.plugin.Filter(context.Background(), state, pod, byName["b1"]); !status.IsSuccess() {
		t.Fatalf("b1: %v", status)
	}
}

// terminating is a member bound on nodeName whose deletion has begun (its old job was
// deleted, or it is being replaced): it still holds its resources until it is gone.
func terminating(job string, index, size int, nodeName string) *v1.Pod {
	pod := member(job, index, size, nodeName)
	pod.DeletionTimestamp = &metav1.Time{}
	return pod
}

func TestTerminatingMembersNeitherFixTheZoneNorCountTowardsTheJob(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	// The job of 4 was deleted while bound on a1 and created again under its name: its old
	// pods still hold a1's 4 GPUs. A then holds 2 copies, B 8 and C 2: the new job goes to B.
	var old []*v1.Pod
	for index := range 4 {
		old = append(old, terminating("llm", 10+index, 4, "a1"))
	}
	h.lister.set(append(pods, old...), nodes)
	result, status := h.preFilter(member("llm", 0, 4, ""))
	if !status.IsSuccess() || !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("nodes %v status %v, want zone b's node", result, status)
	}
	// Three old members terminating on b1 do not complete the new job's first member there.
	h.lister.set(append(pods, terminating("llm", 10, 4, "b1"), terminating("llm", 11, 4, "b1"), terminating("llm", 12, 4, "b1")), nodes)
	if status := h.permit(member("llm", 0, 4, ""), "b1"); status.Code() != fwk.Wait {
		t.Fatalf("status %v, want Wait (1 of 4 members placed)", status)
	}
}

func TestAHeldMembersNodeTakenAwayReleasesTheJobAtOnce(t *testing.T) {
	logger := klog.Background()
	for _, tt := range []struct {
		name   string
		change func(*v1.Node) *v1.Node
		why    string
	}{
		{"deleted", func(*v1.Node) *v1.Node { return nil }, "deleted"},
		{"cordoned", func(n *v1.Node) *v1.Node { n.Spec.Unschedulable = true; return n }, gpupolicy.Cordoned},
		{"being deleted", func(n *v1.Node) *v1.Node { n.DeletionTimestamp = &metav1.Time{}; return n }, gpupolicy.Deleting},
		{"untolerated NoExecute taint", func(n *v1.Node) *v1.Node {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "maintenance", Effect: v1.TaintEffectNoExecute})
			return n
		}, "taint maintenance"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			pods, nodes := sixVersusEight()
			h.lister.set(pods, nodes)
			first, second := member("llm", 0, 3, ""), member("llm", 1, 3, "")
			if status := h.permit(first, "b1"); status.Code() != fwk.Wait {
				t.Fatalf("first member: %v, want Wait", status)
			}
			firstDone := h.waitResult(first)
			h.lister.set(append(pods, member("llm", 0, 3, "b1")), nodes)
			if status := h.permit(second, "a1"); status.Code() != fwk.Wait {
				t.Fatalf("second member: %v, want Wait", status)
			}
			secondDone := h.waitResult(second)
			// a1 changes in a way that keeps its member: nothing is released.
			h.plugin.releaseJobsOn(logger, "a1", gpuNode("a1", "us-east-1a", 4))
			node := tt.change(gpuNode("b1", "us-east-1b", 8))
			h.plugin.releaseJobsOn(logger, "b1", node)
			want := fmt.Sprintf(NodeTakenFormat, "ml/llm", "b1", "ml/llm-0", tt.why)
			for what, done := range map[string]<-chan *fwk.Status{"first": firstDone, "second": secondDone} {
				if status := receive(t, what, done); status.IsSuccess() || !strings.Contains(status.Message(), want) {
					t.Errorf("%s member: %v, want rejected with %q", what, status, want)
				}
			}
		})
	}
}

func TestTheMemberCompletingAJobChecksEveryHeldMembersNode(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight()
	h.lister.set(pods, nodes)
	first := member("llm", 0, 2, "")
	if status := h.permit(first, "a1"); status.Code() != fwk.Wait {
		t.Fatalf("first member: %v, want Wait", status)
	}
	firstDone := h.waitResult(first)
	// a1 is cordoned by the time the second member completes the job on a2 (the node
	// event has not released the job yet): the job is not let through.
	var cordoned []*v1.Node
	for _, node := range nodes {
		if node.Name == "a1" {
			node = node.DeepCopy()
			node.Spec.Unschedulable = true
		}
		cordoned = append(cordoned, node)
	}
	h.lister.set(append(pods, member("llm", 0, 2, "a1")), cordoned)
	status := h.permit(member("llm", 1, 2, ""), "a2")
	want := fmt.Sprintf(NodeTakenFormat, "ml/llm", "a1", "ml/llm-0", gpupolicy.Cordoned)
	if status.Code() != fwk.Unschedulable || !strings.Contains(status.Message(), want) {
		t.Fatalf("completing member: %v, want Unschedulable %q", status, want)
	}
	if status := receive(t, "first", firstDone); status.IsSuccess() {
		t.Fatalf("first member: %v, want rejected", status)
	}
}

func TestAPlannedJobHoldsItsZoneFromTheNextJobsPlan(t *testing.T) {
	h := newHarness(t, nil)
	pods, nodes := sixVersusEight() // free GPUs: a 6, b 8, c 2
	h.lister.set(pods, nodes)
	// Two jobs of 4 planned one after the other, before either has a member placed: the
	// first takes a (the tightest fit), the second sees a's 6 less the first's 4 and goes
	// to b; without the ledger both would plan a, which holds only one of them.
	if result, _ := h.preFilter(member("first", 0, 4, "")); !result.NodeNames.Equal(sets.New("a1", "a2")) {
		t.Fatalf("first job: %v, want zone a", result.NodeNames)
	}
	if result, _ := h.preFilter(member("second", 0, 4, "")); !result.NodeNames.Equal(sets.New("b1")) {
		t.Fatalf("second job: %v, want zone b", result.NodeNames)
	}
	noZone := func(a, b, c int64) string {
		return zonepolicy.PlanZone(map[string]int64{"us-east-1a": a, "us-east-1b": b, "us-east-1c": c}, 5, nil).Message
	}
	// A job of 5 fits nowhere now: the message counts what the plans leave.
	if _, status := h.preFilter(member("third", 0, 5, "")); status.Message() != noZone(2, 4, 2) {
		t.Fatalf("third job: %v, want %q", status, noZone(2, 4, 2))
	}
	// Members placed count against their own job's need: with three of the first job's
	// members assumed in a (3 GPUs free there), it still needs one GPU more.
	h.lister.set(append(pods, member("first", 0, 4, "a1"), member("first", 1, 4, "a1"), member("first", 2, 4, "a1")), nodes)
	if _, status := h.preFilter(member("third", 0, 5, "")); status.Message() != noZone(2, 4, 2) {
		t.Fatalf("third job beside a partly placed one: %v, want %q", status, noZone(2, 4, 2))
	}
	// Placed whole, the first job releases a; given up, the second releases b.
	h.plugin.mu.Lock()
	h.plugin.release("ml/first")
	h.plugin.release("ml/second")
	h.plugin.mu.Unlock()
	h.lister.set(pods, nodes)
	if result, _ := h.preFilter(member("third", 0, 5, "")); !result.NodeNames.Equal(sets.New("a1", "a2")) {
		t.Fatalf("after the releases: %v, want zone a", result.NodeNames)
	}
}
