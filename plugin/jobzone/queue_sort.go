package jobzone

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Less orders the scheduling queue so that one job's members come out back to back, as
// scheduler-plugins' Coscheduling does: higher priority first; then the earlier of the
// job's first member's creation time and, for a pod in no job, the time it entered the
// queue (kube-scheduler's PrioritySort); then the job's name, so two jobs created in the
// same second do not interleave; then the pod's name. Two pods in no job keep
// PrioritySort's order. A job keeps its place while any of its members exists, so a
// member its controller creates again is not sent to the back behind newer work.
func (pl *JobZone) Less(a, b fwk.QueuedPodInfo) bool {
	podA, podB := a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod()
	if pa, pb := corev1helpers.PodPriority(podA), corev1helpers.PodPriority(podB); pa != pb {
		return pa > pb
	}
	keyA, keyB := pl.queueKey(a), pl.queueKey(b)
	if !keyA.since.Equal(keyB.since) {
		return keyA.since.Before(keyB.since)
	}
	if keyA.job != keyB.job {
		return keyA.job < keyB.job
	}
	return keyA.pod < keyB.pod
}

// queueKey is where a pod of a given priority stands in the queue: since when it or its
// job has waited, the job (empty for a pod in no job), the pod.
type queueKey struct {
	since    time.Time
	job, pod string
}

func (pl *JobZone) queueKey(info fwk.QueuedPodInfo) queueKey {
	pod := info.GetPodInfo().GetPod()
	job, err := pl.declaredJob(pod)
	if err != nil || job == nil {
		return queueKey{since: info.GetTimestamp(), pod: pod.Namespace + "/" + pod.Name}
	}
	key := jobKey(pod, job)
	since := pod.CreationTimestamp.Time
	if first, ok := pl.order.firstCreated(key); ok && first.Before(since) {
		since = first
	}
	return queueKey{since: since, job: key, pod: pod.Namespace + "/" + pod.Name}
}

// jobOrder knows, for each job with a member the scheduler sees, when its earliest member
// was created: Less orders the job's members by it. It is kept from the pod informer.
type jobOrder struct {
	mu sync.RWMutex
	// jobs are the jobs by namespace/name.
	jobs map[string]*jobMembers
	// jobOf is each known member's job, so an update that changes a pod's job or a
	// deletion finds it.
	jobOf map[types.UID]string
}

// jobMembers are the members of one job the scheduler sees, the earliest creation time
// among every member seen while any remained, and the job size each member not being
// deleted declares.
type jobMembers struct {
	first   time.Time
	members map[types.UID]struct{}
	sizes   map[types.UID]int64
	// placed is set once the job was placed whole: a member created later (one the
	// job's controller recreated) joins it without waiting for siblings.
	placed bool
}

func newJobOrder() *jobOrder {
	return &jobOrder{jobs: map[string]*jobMembers{}, jobOf: map[types.UID]string{}}
}

// firstCreated is the creation time of the job's earliest member, false for a job with no
// member known.
func (o *jobOrder) firstCreated(key string) (time.Time, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if members, ok := o.jobs[key]; ok {
		return members.first, true
	}
	return time.Time{}, false
}

// set records the pod under its job and the size it declares (key "" for a pod in no job,
// which forgets it).
func (o *jobOrder) set(pod *v1.Pod, key string, size int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.jobOf[pod.UID]; ok && old != key {
		o.forgetLocked(pod.UID, old)
	}
	if key == "" {
		return
	}
	o.jobOf[pod.UID] = key
	members, ok := o.jobs[key]
	if !ok {
		members = &jobMembers{first: pod.CreationTimestamp.Time, members: map[types.UID]struct{}{}, sizes: map[types.UID]int64{}}
		o.jobs[key] = members
	}
	if pod.CreationTimestamp.Time.Before(members.first) {
		members.first = pod.CreationTimestamp.Time
	}
	members.members[pod.UID] = struct{}{}
	delete(members.sizes, pod.UID)
	if pod.DeletionTimestamp == nil {
		members.sizes[pod.UID] = size
	}
}

// declaredSizes are the distinct job sizes the job's members not being deleted declare,
// smallest first.
func (o *jobOrder) declaredSizes(key string) []int64 {
	o.mu.RLock()
	defer o.mu.RUnlock()
	members, ok := o.jobs[key]
	if !ok {
		return nil
	}
	var sizes []int64
	for _, size := range members.sizes {
		if !slices.Contains(sizes, size) {
			sizes = append(sizes, size)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// markPlaced records that the job was placed whole (kept while any member remains).
func (o *jobOrder) markPlaced(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if members, ok := o.jobs[key]; ok {
		members.placed = true
	}
}

// wasPlaced reports whether the job was placed whole since its first member was seen.
func (o *jobOrder) wasPlaced(key string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	members, ok := o.jobs[key]
	return ok && members.placed
}

// forget drops a pod that is gone; a job with no member left is forgotten with it.
func (o *jobOrder) forget(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if key, ok := o.jobOf[uid]; ok {
		o.forgetLocked(uid, key)
	}
}

func (o *jobOrder) forgetLocked(uid types.UID, key string) {
	delete(o.jobOf, uid)
	members, ok := o.jobs[key]
	if !ok {
		return
	}
	delete(members.members, uid)
	delete(members.sizes, uid)
	if len(members.members) == 0 {
		delete(o.jobs, key)
	}
}

// watchPods keeps the job order from the scheduler's pod informer (which leaves out
// Succeeded and Failed pods, so a finished member stops holding its job's place). A placed
// pod deleted ends the skips of its zone that wait for room (zone_skips.go).
func (pl *JobZone) watchPods(logger klog.Logger) error {
	informers := pl.handle.SharedInformerFactory()
	if informers == nil {
		return nil
	}
	record := func(obj interface{}) {
		if pod, ok := obj.(*v1.Pod); ok {
			key, size := pl.orderKey(pod)
			pl.order.set(pod, key, size)
		}
	}
	_, err := informers.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			record(obj)
			if pod, ok := obj.(*v1.Pod); ok {
				pl.activateWhenComplete(pod)
			}
		},
		UpdateFunc: func(_, newObj interface{}) { record(newObj) },
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				pl.order.forget(pod.UID)
				pl.podLeft(logger, pod)
			}
		},
	})
	return err
}

// orderKey is the pod's job as namespace/name and the size it declares (0 for an Indexed
// Job's size, which is on the Job), "" for a pod in no job or with an invalid job
// annotation (PreFilter reports that one).
func (pl *JobZone) orderKey(pod *v1.Pod) (string, int64) {
	job, err := pl.declaredJob(pod)
	if err != nil || job == nil {
		return "", 0
	}
	return jobKey(pod, job), job.Size
}
