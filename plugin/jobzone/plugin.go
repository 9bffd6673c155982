// Package jobzone is the JobZone plugin for the kube-scheduler framework: it keeps
// every pod of a same-zone job in one Availability Zone, chosen where the whole job
// fits, and binds none of them until all are placed there.
//
//   - QueueSort (Less) brings a job's members out of the queue back to back: priority,
//     then the job's earliest member's creation time, then the job's name; pods in no
//     job keep PrioritySort's order.
//   - PreEnqueue keeps a member of a job not yet placed out of the scheduling queue while
//     fewer than job-size members exist (siblings.go; PreFilter refuses it too), so a
//     half-created job holds nothing and costs no scheduling attempt; the member that
//     completes it sends the others back to the active queue.
//   - PreFilter restricts a job's pod to the zone where its members are already bound
//     or assumed. For the first pod it plans the zone that holds job-size copies of
//     the pod (every requested resource such as GPUs, CPU, memory and EFA interfaces,
//     GPU-memory fit, taints and node affinity, less
//     the GPUs other planned jobs still need in each zone), tightest fit first,
//     skipping zones recently given up for the job (zone_skips.go); when none does, the pod is
//     unschedulable with every zone's count in the message. The plan holds its zone's
//     GPUs for the job until it is placed, given up, or permitTimeout passes with no
//     member waiting.
//   - Filter refuses a node outside that zone, so a member whose stale
//     status.nominatedNodeName names a node elsewhere (kube-scheduler tries the
//     nominated node first, without PreFilter's node set) still stays in its zone.
//   - PostFilter, when no node of the job's zone passed the filters for a member, gives
//     the zone up for the job at once (held members rejected, the zone skipped until room
//     frees there, the job requeued) and preempts nothing for one member of a job
//     not yet placed. For a job PreFilter found no zone for, it preempts for the whole job in
//     one zone or not at all (gang_preemption.go). For every other pod it is the profile's
//     preemption:
//     DefaultPreemption, which follows priority and takes a lower-priority job whole, every
//     member on every node, or none of it (preemption.go, whole_job_preemption.go).
//   - Permit holds the job's pods until job-size members are reserved in the zone,
//     then lets them all bind, in one decision under the plugin's lock that counts the
//     members still waiting and checks every member's node (gang.go). After permitTimeout
//     JobZone rejects every held member and skips the zone for the job for
//     failedZoneDuration, so the retry plans elsewhere. When a held member's node is
//     deleted or taken away meanwhile, or preemption takes a held member, every held
//     member is rejected at once. Every release requeues the job's members (hold.go), and
//     every member given up loses the nomination kube-scheduler wrote for its hold
//     (nominations.go), so autoscalers see it again.
//
// The rules (which pods form a job, which zone wins) live in package zonepolicy; this
// package adapts them to the framework's extension points. It follows the semantics
// of scheduler-plugins' Coscheduling (PodGroup minMember, Permit) and honours its
// scheduling.x-k8s.io/pod-group label as the job's name.
package jobzone

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/utils/clock"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// Name is the plugin's name in the registry and in KubeSchedulerConfiguration profiles.
const Name = "JobZone"

// stateKey is where PreFilter leaves the pod's job for Permit and Unreserve.
const stateKey fwk.StateKey = "PreFilter" + Name

// Status messages this plugin reports, next to the rule that produces them (the
// zone plan's own messages are zonepolicy's).
const (
	// WaitingFormat describes a member held at Permit: reserved count, job size, job, zone.
	WaitingFormat = "%d of %d members of job %s reserved in zone %s; waiting for the rest"
	// TimedOutFormat is the rejection of every held member when the job's time ran
	// out: job, job size, zone, permitTimeout, failedZoneDuration.
	TimedOutFormat = "job %s: not all %d members were placed in zone %s within %s; the zone is skipped for this job for %s"
	// OutsideZoneFormat is Filter's refusal of a node outside the job's zone: job, zone.
	OutsideZoneFormat = "node is outside zone %s, where job %s is placed"
	// SizeMismatchFormat is PreFilter's refusal while the job's members (those not being
	// deleted) declare different job sizes: job, the sizes, the job-size annotation.
	SizeMismatchFormat = "job %s: its members declare different sizes %v; every member must declare the same %s"
	// MemberUnreservedFormat is the rejection of the held members when one of them
	// was unreserved for another reason: job, the member.
	MemberUnreservedFormat = "job %s: member %s was unreserved; the job is placed again"
)

// JobZone places same-zone jobs whole.
type JobZone struct {
	config config
	handle fwk.Handle
	clock  clock.WithDelayedExecution

	mu sync.Mutex
	// gangs are the jobs with members held at Permit, by namespace/name.
	gangs map[string]*gang
	// generation is the last hold's generation (hold.go).
	generation uint64
	// released are the members JobZone rejected at Permit whose Unreserve has not come yet.
	released map[types.UID]struct{}
	// failed are, by job, the zones skipped for the job and until when (zone_skips.go).
	failed map[string]map[string]time.Time
	// roomSkips are, by zone, the jobs whose skip of that zone ends when room frees there.
	roomSkips map[string]map[string]roomSkip
	// reservations are the planned jobs' holds on their zones, by namespace/name (ledger.go).
	reservations map[string]reservation
	// order is when each job's earliest member was created, for Less (queue_sort.go).
	order *jobOrder
	// pods is the scheduler's pod informer's lister, for counting a job's members
	// (siblings.go); nil without an informer factory.
	pods corelisters.PodLister
	// nodes is the scheduler's node informer's lister, for the nodes' state when a job
	// completes; nil without an informer factory (the cycle's snapshot is read instead).
	nodes corelisters.NodeLister
	// jobs is the scheduler's Job informer's lister, for an Indexed Job's size (its
	// spec.completions); nil without an informer factory.
	jobs batchlisters.JobLister
	// volumes reads the claims and volumes a member mounts (volume_zones.go); nil without an
	// informer factory.
	volumes *volumeListers
	// preemption is DefaultPreemption with JobZone's victim rule (preemption.go).
	preemption *defaultpreemption.DefaultPreemption
	// jobPreemptions are the victims of the jobs that preempted as a whole (gang_preemption.go).
	jobPreemptions jobPreemptions
}

var (
	_ fwk.QueueSortPlugin   = &JobZone{}
	_ fwk.PreFilterPlugin   = &JobZone{}
	_ fwk.FilterPlugin      = &JobZone{}
	_ fwk.ReservePlugin     = &JobZone{}
	_ fwk.PermitPlugin      = &JobZone{}
	_ fwk.EnqueueExtensions = &JobZone{}
	_ fwk.SignPlugin        = &JobZone{}
)

// New builds the plugin from its pluginConfig args (nil for the defaults); see Args.
// The handle is needed at Permit (the snapshot, the waiting pods); New refuses nil.
func New(ctx context.Context, args runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	return newWithClock(ctx, args, handle, clock.RealClock{})
}

func newWithClock(ctx context.Context, args runtime.Object, handle fwk.Handle, clk clock.WithDelayedExecution) (*JobZone, error) {
	c, err := configFromArgs(args)
	if err != nil {
		return nil, err
	}
	RegisterMetrics()
	if handle == nil {
		return nil, fmt.Errorf("%s needs the framework handle", Name)
	}
	klog.FromContext(ctx).V(2).Info("JobZone configured", "permitTimeout", c.permitTimeout,
		"failedZoneDuration", c.failedZoneDuration, "maxJobSize", c.zone.MaxJobSize, "zoneLabel", c.zone.ZoneLabel)
	pl := &JobZone{
		config: c, handle: handle, clock: clk,
		gangs: map[string]*gang{}, released: map[types.UID]struct{}{}, failed: map[string]map[string]time.Time{}, roomSkips: map[string]map[string]roomSkip{}, reservations: map[string]reservation{},
		order: newJobOrder(),
	}
	preemption, err := pl.newPreemption(ctx)
	if err != nil {
		return nil, err
	}
	pl.preemption = preemption
	if err := pl.watchNodes(klog.FromContext(ctx)); err != nil {
		return nil, fmt.Errorf("%s: watching nodes: %w", Name, err)
	}
	if informers := handle.SharedInformerFactory(); informers != nil {
		if err := indexPodsByNamespace(informers.Core().V1().Pods().Informer()); err != nil {
			return nil, fmt.Errorf("%s: indexing pods by namespace: %w", Name, err)
		}
		pl.pods = informers.Core().V1().Pods().Lister()
		pl.nodes = informers.Core().V1().Nodes().Lister()
		pl.jobs = informers.Batch().V1().Jobs().Lister()
		pl.volumes = &volumeListers{
			claims:  informers.Core().V1().PersistentVolumeClaims().Lister(),
			volumes: informers.Core().V1().PersistentVolumes().Lister(),
		}
	}
	if err := pl.watchPods(klog.FromContext(ctx)); err != nil {
		return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	return pl, nil
}

// indexPodsByNamespace gives the scheduler's pod informer client-go's namespace index.
// kube-scheduler makes that informer with no index, so without it every Pods(namespace).List
// (a job's members, counted at PreEnqueue, PreFilter and Permit) scans every pod in the cluster
// and logs "can not retrieve list of objects using index" at every verbosity, once a call.
func indexPodsByNamespace(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// Name returns the plugin's name.
func (pl *JobZone) Name() string { return Name }

// jobState is the pod's job for this cycle (nil: not a same-zone pod) and the zone
// PreFilter restricted it to.
type jobState struct {
	job  *zonepolicy.Job
	zone string
}

// Clone returns the state itself: it never changes after PreFilter.
func (s *jobState) Clone() fwk.StateData { return s }

// jobOf reads what PreFilter stored, or reads the pod when PreFilter did not run.
func (pl *JobZone) jobOf(state fwk.CycleState, pod *v1.Pod) *zonepolicy.Job {
	if state != nil {
		if data, err := state.Read(stateKey); err == nil {
			if s, ok := data.(*jobState); ok {
				return s.job
			}
		}
	}
	job, err := pl.jobFromPod(pod)
	if err != nil {
		return nil
	}
	return job
}

// jobFromPod is the pod's same-zone job with its size, an Indexed Job's read from the
// Job in the informer's cache.
func (pl *JobZone) jobFromPod(pod *v1.Pod) (*zonepolicy.Job, error) {
	return zonepolicy.JobFromPod(pod, pl.config.zone, pl.ownerJobs)
}

// declaredJob is the pod's same-zone job as the pod declares it, for what needs only its
// identity (an Indexed Job's size is 0 there).
func (pl *JobZone) declaredJob(pod *v1.Pod) (*zonepolicy.Job, error) {
	return zonepolicy.DeclaredJob(pod, pl.config.zone)
}

// ownerJobs reads a Job from the informer's cache; nil when absent or without an informer.
func (pl *JobZone) ownerJobs(namespace, name string) *batchv1.Job {
	if pl.jobs == nil {
		return nil
	}
	job, err := pl.jobs.Jobs(namespace).Get(name)
	if err != nil {
		return nil
	}
	return job
}

func jobKey(pod *v1.Pod, job *zonepolicy.Job) string { return pod.Namespace + "/" + job.Name }

// PreFilter restricts a same-zone pod to its job's zone: the zone of members already
// bound or assumed, or for the first member the zone planned for the whole job. Members
// in a zone the job just timed out in are being given up and do not count. A pod
// in no job is skipped (this plugin costs it nothing more); a pod whose zone-policy
// or job-size annotation is invalid, or whose job fits no zone, is unschedulable with
// the reason.
func (pl *JobZone) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	job, err := pl.jobFromPod(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	state.Write(stateKey, &jobState{job: job})
	if job == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if sizes := pl.order.declaredSizes(jobKey(pod, job)); len(sizes) > 1 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf(SizeMismatchFormat, jobKey(pod, job), sizes, pl.config.zone.JobSizeAnnotation))
	}
	logger := klog.FromContext(ctx)
	failed := pl.failedZones(jobKey(pod, job))
	zone := memberZone(nodes, pod, job, pl.config.zone, failed)
	if zone == "" && !pl.order.wasPlaced(jobKey(pod, job)) {
		exist, err := existingMembers(pl.pods, pod, job, pl.config.zone)
		if err != nil {
			return nil, fwk.AsStatus(err)
		}
		if exist >= 0 && exist < job.Size {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf(SiblingsFormat, jobKey(pod, job), exist, job.Size))
		}
	}
	if zone == "" {
		key := jobKey(pod, job)
		shapes, mixed, err := pl.jobShapes(pod, job)
		if err != nil {
			return nil, fwk.AsStatus(err)
		}
		reserved := pl.reservedByOthers(key, nodes)
		var copies map[string]int64
		if mixed {
			copies = wholeJobByZone(logger, nodes, shapes, reserved, pl.config)
		} else {
			copies = withoutReserved(copiesByZone(logger, nodes, shapes[0], pl.config), reserved, shapes[0].gpus)
		}
		plan := zonepolicy.PlanZone(copies, job.Size, failed)
		countPlan(plan.Zone != "")
		if plan.Zone == "" {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, plan.Message)
		}
		zone = plan.Zone
		pl.reserve(key, pod.Namespace, zone, job, gpusOf(shapes))
		logger.V(3).Info("planned a zone for a job", "pod", klog.KObj(pod), "job", job.Name, "size", job.Size, "zone", zone,
			"membersAlike", !mixed, "copiesByZone", copies)
	}
	state.Write(stateKey, &jobState{job: job, zone: zone})
	names, reason, ok := pl.topologyNodeNames(logger, nodes, pod, job, zone)
	if !ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	return &fwk.PreFilterResult{NodeNames: names}, nil
}

// Filter refuses a node outside the zone PreFilter chose for the pod's job. PreFilter's
// node set already keeps the pod there, except on kube-scheduler's first try of a
// pod's nominated node, which runs the Filter plugins on that node alone; a nomination
// left from before the job was planned again must not take a member out of its zone.
// A pod in no job never reaches here (PreFilter skipped it).
func (pl *JobZone) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	data, err := state.Read(stateKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("%s: reading PreFilter state: %w", Name, err))
	}
	s, ok := data.(*jobState)
	if !ok || s.job == nil {
		return nil
	}
	if zone := zoneOf(info.Node(), pl.config.zone); zone != s.zone {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(OutsideZoneFormat, s.zone, jobKey(pod, s.job)))
	}
	return nil
}

// PreFilterExtensions returns nil: the zone does not change with a preemption victim.
func (pl *JobZone) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// SignPod refuses to sign a same-zone pod (its result depends on the other members, so
// it must never share a cached result) and signs every other pod with nothing, so
// batching stays on for them.
func (pl *JobZone) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if job, err := pl.declaredJob(pod); err != nil || job != nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "same-zone job members are placed one by one")
	}
	return nil, nil
}
