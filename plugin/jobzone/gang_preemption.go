package jobzone

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	preemptionpkg "k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// A job that fits in no zone preempts as a whole (Coscheduling preempts nothing for a gang;
// kube-scheduler's DefaultPreemption looks for room for one pod on one node). When PreFilter
// finds no zone for a job not yet placed, PostFilter looks, zone by zone, for the victims that
// would make the whole job fit there, with kube-scheduler's own rules scaled from a node to a
// zone:
//
//   - the job preempts with its lowest member's priority (so no member takes more than its own
//     priority allows) and not at all when a member has preemptionPolicy Never;
//   - a potential victim is a pod in the zone below that priority that DefaultPreemption's
//     victim rule admits; a pod in a job brings every placed member of its job, on any node
//     (the job is evicted whole or not at all; a job with a member at or above the priority is
//     no victim), a pod in no job comes alone;
//   - with every potential victim gone the whole job must fit in the zone (every member at
//     once, as the plan counts, less the GPUs other jobs' plans hold there), or the zone is no
//     candidate; then victims are reprieved as DefaultPreemption reprieves them on a node:
//     those whose PodDisruptionBudget they would break first, then the others, most important
//     first, each kept when the whole job still fits without it;
//   - the zone is chosen among the candidates by kube-scheduler's own ranking
//     (Evaluator.SelectCandidate: fewest budget violations, lowest highest-priority victim,
//     lowest sum of priorities, fewest victims, latest start);
//   - the victims are evicted by kube-scheduler's own eviction (Evaluator.PreemptPod:
//     DisruptionTarget condition, deletion, event; a victim held at Permit ends its job's hold
//     instead), and until every victim is gone the job preempts nothing more.
//
// Nothing is evicted unless the whole job then fits; a member never preempts for itself alone.

// Status messages of a job's preemption.
const (
	// JobPreemptedFormat is a member's status once its job has evicted victims: job, victims,
	// zone.
	JobPreemptedFormat = "job %s: preempted %d lower-priority pods in zone %s so the whole job fits; waiting for them to leave"
	// JobWaitsForVictimsFormat is a member's status while its job's victims terminate: job,
	// victims left, zone.
	JobWaitsForVictimsFormat = "job %s: waiting for %d preempted pods to leave zone %s"
	// JobNoPreemptionFormat is a member's status when no zone would hold the whole job even
	// without every pod it may preempt: job.
	JobNoPreemptionFormat = "job %s: preemption would not make room for the whole job in any zone"
	// JobPreemptNeverFormat is a member's status when a member may not preempt: job, member.
	JobPreemptNeverFormat = "job %s: member %s has preemptionPolicy Never; the job preempts nothing"
)

// jobPreemptions are the victims each job evicted, by namespace/name, until they are gone.
type jobPreemptions struct {
	mu      sync.Mutex
	pending map[string]pendingPreemption
}

type pendingPreemption struct {
	zone    string
	victims []*v1.Pod
}

// zoneCandidate is a zone and the victims that make room for the whole job in it, as
// kube-scheduler's evaluator ranks candidates.
type zoneCandidate struct {
	zone    string
	victims *extenderv1.Victims
}

func (c *zoneCandidate) Victims() *extenderv1.Victims { return c.victims }
func (c *zoneCandidate) Name() string                 { return c.zone }

// nodeCandidate names a victim's node for the evaluator's eviction (its event says "on node").
type nodeCandidate struct {
	node    string
	victims *extenderv1.Victims
}

func (c *nodeCandidate) Victims() *extenderv1.Victims { return c.victims }
func (c *nodeCandidate) Name() string                 { return c.node }

// victimUnit is what is evicted together: a job's placed members, or one pod in no job.
type victimUnit struct {
	pods []*v1.Pod
	// head is the unit's most important pod, by which units are ordered.
	head *v1.Pod
}

// preemptForJob runs when PreFilter found no zone for the job: it evicts, in the one zone
// where that takes the least, the lower-priority pods whose absence lets the whole job fit.
func (pl *JobZone) preemptForJob(ctx context.Context, pod *v1.Pod, job *zonepolicy.Job) (*fwk.PostFilterResult, *fwk.Status) {
	if pl.preemption == nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable)
	}
	key := jobKey(pod, job)
	logger := klog.FromContext(ctx)
	if !pl.wholeJobExists(pod, job) {
		// PreFilter refused the job for what it lacks (members not created yet, sizes that
		// differ): no eviction gives it that.
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable)
	}
	if zone, left := pl.victimsLeft(key); left > 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(JobWaitsForVictimsFormat, key, left, zone))
	}
	priority, never := pl.jobPriority(pod, job)
	if never != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(JobPreemptNeverFormat, key, klog.KObj(never)))
	}
	shapes, _, err := pl.jobShapes(pod, job)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	pdbs, err := pl.preemption.Evaluator.PdbLister.List(labels.Everything())
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	failed := pl.failedZones(key)
	reserved := pl.reservedByOthers(key, nodes)
	var candidates []preemptionpkg.Candidate
	for _, zone := range zonesOf(nodes, pl.config.zone) {
		if failed[zone] {
			continue
		}
		infos := nodesInZone(nodes, zone, pl.config.zone)
		victims := pl.zoneVictims(logger, pod, job, priority, shapes, infos, reserved[zone], pdbs)
		if len(victims) == 0 {
			continue
		}
		candidates = append(candidates, &zoneCandidate{zone: zone, victims: &extenderv1.Victims{
			Pods: victims, NumPDBViolations: int64(addedViolations(nil, victims, pdbs)),
		}})
	}
	if len(candidates) == 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(JobNoPreemptionFormat, key))
	}
	best := pl.preemption.Evaluator.SelectCandidate(ctx, candidates)
	victims := best.Victims().Pods
	pl.recordVictims(key, best.Name(), victims)
	if status := pl.evict(ctx, pod, victims); !status.IsSuccess() {
		pl.recordVictims(key, "", nil)
		return nil, status
	}
	logger.V(2).Info("a job preempted lower-priority pods so it fits whole", "job", key, "zone", best.Name(),
		"victims", len(victims), "priority", priority)
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf(JobPreemptedFormat, key, len(victims), best.Name()))
}

// wholeJobExists reports whether every member of the job exists and they agree on its size.
func (pl *JobZone) wholeJobExists(pod *v1.Pod, job *zonepolicy.Job) bool {
	if len(pl.order.declaredSizes(jobKey(pod, job))) > 1 {
		return false
	}
	exist, err := existingMembers(pl.pods, pod, job, pl.config.zone)
	return err == nil && (exist < 0 || exist >= job.Size)
}

// jobPriority is the lowest priority among the job's members not yet placed (self included),
// and the first member whose preemptionPolicy is Never (nil when none).
func (pl *JobZone) jobPriority(self *v1.Pod, job *zonepolicy.Job) (int32, *v1.Pod) {
	members := []*v1.Pod{self}
	if pl.pods != nil {
		listed, err := pl.pods.Pods(self.Namespace).List(labels.SelectorFromSet(job.MatchLabels))
		if err == nil {
			for _, p := range listed {
				if p.UID != self.UID && p.Spec.NodeName == "" && isPlacedMember(p, self.Namespace, job, pl.config.zone) {
					members = append(members, p)
				}
			}
		}
	}
	priority := corev1helpers.PodPriority(self)
	for _, member := range members {
		if member.Spec.PreemptionPolicy != nil && *member.Spec.PreemptionPolicy == v1.PreemptNever {
			return 0, member
		}
		priority = min(priority, corev1helpers.PodPriority(member))
	}
	return priority, nil
}

// zoneVictims is the fewest, least important pods whose eviction lets the whole job (shapes)
// fit in the zone's nodes (infos, not changed), most important first; nil when none would.
func (pl *JobZone) zoneVictims(logger klog.Logger, self *v1.Pod, job *zonepolicy.Job, priority int32, shapes []podShape,
	infos []fwk.NodeInfo, reservedGPUs int64, pdbs []*policy.PodDisruptionBudget) []*v1.Pod {
	copies := make(map[string]fwk.NodeInfo, len(infos))
	zoneNodes := make([]fwk.NodeInfo, 0, len(infos))
	for _, info := range infos {
		c := info.Snapshot()
		copies[c.Node().Name] = c
		zoneNodes = append(zoneNodes, c)
	}
	units := pl.victimUnits(self, job, priority, infos)
	if len(units) == 0 {
		return nil
	}
	fits := func() bool { return wholeJobIn(logger, zoneNodes, shapes, reservedGPUs, pl.config) >= job.Size }
	if fits() {
		// The job fits without evicting anything: preemption is not what it lacks.
		return nil
	}
	podInfos := map[types.UID]fwk.PodInfo{}
	for _, info := range infos {
		for _, pi := range info.GetPods() {
			podInfos[pi.GetPod().UID] = pi
		}
	}
	remove := func(unit victimUnit) {
		for _, p := range unit.pods {
			if info := copies[p.Spec.NodeName]; info != nil {
				_ = info.RemovePod(logger, p)
			}
		}
	}
	restore := func(unit victimUnit) {
		for _, p := range unit.pods {
			if info, pi := copies[p.Spec.NodeName], podInfos[p.UID]; info != nil && pi != nil {
				info.AddPodInfo(pi)
			}
		}
	}
	for _, unit := range units {
		remove(unit)
	}
	if !fits() {
		return nil
	}
	moreImportant := pl.preemption.MoreImportantPod
	sort.SliceStable(units, func(i, j int) bool { return moreImportant(units[i].head, units[j].head) })
	violating, others := unitsBreakingBudgets(units, pdbs)
	var victims []*v1.Pod
	for _, unit := range append(violating, others...) {
		restore(unit)
		if !fits() {
			remove(unit)
			victims = append(victims, unit.pods...)
		}
	}
	sort.SliceStable(victims, func(i, j int) bool { return moreImportant(victims[i], victims[j]) })
	return victims
}

// victimUnits groups the zone's pods the job may preempt: below priority, admitted by the
// victim rule (mayEvict), not of the job itself; a pod in a job with every placed member of
// its job (zonepolicy.WholeJobVictims), a pod in no job alone.
func (pl *JobZone) victimUnits(self *v1.Pod, job *zonepolicy.Job, priority int32, infos []fwk.NodeInfo) []victimUnit {
	preemptor := self.DeepCopy()
	preemptor.Spec.Priority = &priority
	var units []victimUnit
	seen := map[types.UID]bool{}
	for _, info := range infos {
		for _, pi := range info.GetPods() {
			p := pi.GetPod()
			if seen[p.UID] || corev1helpers.PodPriority(p) >= priority || isMember(p, self.Namespace, job, pl.config.zone) ||
				!pl.preemption.IsEligiblePod(info, pi, preemptor) {
				continue
			}
			chosen := []*v1.Pod{p}
			whole := zonepolicy.WholeJobVictims(chosen, pl.membersOf(chosen), priority, pl.config.zone, pl.ownerJobs)
			if whole.Outcome == zonepolicy.VictimsOutranked {
				continue
			}
			unit := victimUnit{head: p}
			for _, member := range whole.Victims {
				if seen[member.UID] {
					continue
				}
				seen[member.UID] = true
				unit.pods = append(unit.pods, member)
				if pl.preemption.MoreImportantPod(member, unit.head) {
					unit.head = member
				}
			}
			units = append(units, unit)
		}
	}
	return units
}

// unitsBreakingBudgets splits the units, in order, into those with a pod whose
// PodDisruptionBudget has no disruption left once the units before it are taken, and the rest
// (DefaultPreemption's split of a node's victims, by unit).
func unitsBreakingBudgets(units []victimUnit, pdbs []*policy.PodDisruptionBudget) (violating, others []victimUnit) {
	left := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		left[i] = pdb.Status.DisruptionsAllowed
	}
	for _, unit := range units {
		breaks := false
		for _, p := range unit.pods {
			for i, pdb := range pdbs {
				if budgetCounts(pdb, p) {
					left[i]--
					breaks = breaks || left[i] < 0
				}
			}
		}
		if breaks {
			violating = append(violating, unit)
		} else {
			others = append(others, unit)
		}
	}
	return violating, others
}

// evict evicts the victims with kube-scheduler's eviction (PreemptPod, JobZone's for a
// member held at Permit), in parallel; a victim already being deleted is left alone.
func (pl *JobZone) evict(ctx context.Context, preemptor *v1.Pod, victims []*v1.Pod) *fwk.Status {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var first error
	all := &extenderv1.Victims{Pods: victims}
	pl.handle.Parallelizer().Until(ctx, len(victims), func(i int) {
		victim := victims[i]
		if victim.DeletionTimestamp != nil {
			return
		}
		if err := pl.preemption.Evaluator.PreemptPod(ctx, &nodeCandidate{node: victim.Spec.NodeName, victims: all}, preemptor, victim, Name); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			cancel()
		}
	}, Name)
	if first != nil {
		return fwk.AsStatus(fmt.Errorf("%s: evicting a job's victims: %w", Name, first))
	}
	return nil
}

// recordVictims remembers the job's victims (none: forgets them).
func (pl *JobZone) recordVictims(key, zone string, victims []*v1.Pod) {
	pl.jobPreemptions.mu.Lock()
	defer pl.jobPreemptions.mu.Unlock()
	if len(victims) == 0 {
		delete(pl.jobPreemptions.pending, key)
		return
	}
	if pl.jobPreemptions.pending == nil {
		pl.jobPreemptions.pending = map[string]pendingPreemption{}
	}
	pl.jobPreemptions.pending[key] = pendingPreemption{zone: zone, victims: victims}
}

// victimsLeft is the zone of the job's last preemption and how many of its victims are still
// being deleted (the pod informer has them, same uid, with a deletion timestamp). A victim
// that is gone, or that was never marked for deletion (its eviction failed), does not count;
// when none counts the record is dropped and the job may preempt again.
func (pl *JobZone) victimsLeft(key string) (string, int) {
	pl.jobPreemptions.mu.Lock()
	defer pl.jobPreemptions.mu.Unlock()
	pending, ok := pl.jobPreemptions.pending[key]
	if !ok || pl.pods == nil {
		return "", 0
	}
	left := 0
	for _, victim := range pending.victims {
		current, err := pl.pods.Pods(victim.Namespace).Get(victim.Name)
		if err == nil && current.UID == victim.UID && current.DeletionTimestamp != nil {
			left++
		}
	}
	if left == 0 {
		delete(pl.jobPreemptions.pending, key)
	}
	return pending.zone, left
}

// zonesOf is the zones of the nodes, sorted.
func zonesOf(nodes []fwk.NodeInfo, s zonepolicy.Settings) []string {
	var zones []string
	for _, info := range nodes {
		if zone := zoneOf(info.Node(), s); zone != "" && !slices.Contains(zones, zone) {
			zones = append(zones, zone)
		}
	}
	slices.Sort(zones)
	return zones
}

// nodesInZone is the nodes in zone.
func nodesInZone(nodes []fwk.NodeInfo, zone string, s zonepolicy.Settings) []fwk.NodeInfo {
	var in []fwk.NodeInfo
	for _, info := range nodes {
		if zoneOf(info.Node(), s) == zone {
			in = append(in, info)
		}
	}
	return in
}
