package jobzone

import (
	"encoding/json"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// A job's members need not be alike: an MPI launcher (CPU only) beside its GPU workers, a
// parameter server beside its trainers. Such a job is planned with every member that
// exists, not with job-size copies of the member being scheduled: a zone holds the job when
// its nodes hold each member at once (wholeJobIn), so the first member to be scheduled,
// whichever it is, plans the zone the whole job fits.

// jobShapes returns the shapes of the job's members waiting to be placed, self first, and
// whether they differ. Members come from the scheduler's pod informer (not being deleted,
// not bound); without one, or while fewer exist than the job's size (the sibling gate
// makes that rare), the missing members are taken to be like self. At most job.Size are
// returned, the largest kept.
func (pl *JobZone) jobShapes(self *v1.Pod, job *zonepolicy.Job) ([]podShape, bool, error) {
	shapes := []podShape{pl.shapeOf(self)}
	if pl.pods != nil {
		listed, err := pl.pods.Pods(self.Namespace).List(labels.SelectorFromSet(job.MatchLabels))
		if err != nil {
			return nil, false, err
		}
		for _, pod := range listed {
			if pod.UID != self.UID && pod.Spec.NodeName == "" && isPlacedMember(pod, self.Namespace, job, pl.config.zone) {
				shapes = append(shapes, pl.shapeOf(pod))
			}
		}
	}
	for int64(len(shapes)) < job.Size {
		shapes = append(shapes, shapes[0])
	}
	slices.SortStableFunc(shapes[1:], heavierFirst)
	if int64(len(shapes)) > job.Size {
		shapes = shapes[:job.Size]
	}
	key := shapeKey(self, pl.config)
	for _, shape := range shapes[1:] {
		if shapeKey(shape.pod, pl.config) != key {
			return shapes, true, nil
		}
	}
	return shapes, false, nil
}

// shapeOf is the member's shape with the node affinity of the volumes it mounts.
func (pl *JobZone) shapeOf(pod *v1.Pod) podShape {
	shape := newPodShape(pod, pl.config)
	shape.volumeAffinity = pl.volumes.volumeNodeSelectors(pod)
	return shape
}

// heavierFirst orders shapes by GPUs, then CPU, then memory, most first.
func heavierFirst(a, b podShape) int {
	for _, d := range []int64{b.gpus - a.gpus, b.milliCPU - a.milliCPU, b.memory - a.memory} {
		if d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
	}
	return 0
}

// shapeKey is what makes two members alike for the plan: what they request and every
// rule the plan applies to a node (tolerations, node selector and affinity, the GPU-memory
// and capacity-type annotations, the volumes it mounts).
func shapeKey(pod *v1.Pod, c config) string {
	var affinity *v1.NodeAffinity
	if pod.Spec.Affinity != nil {
		affinity = pod.Spec.Affinity.NodeAffinity
	}
	key, _ := json.Marshal(struct {
		Requests     v1.ResourceList
		Tolerations  []v1.Toleration
		NodeSelector map[string]string
		Affinity     *v1.NodeAffinity
		MinMemory    string
		Capacity     string
		Claims       []string
	}{
		resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}),
		pod.Spec.Tolerations, pod.Spec.NodeSelector, affinity,
		pod.Annotations[c.gpu.MinMemoryAnnotation], pod.Annotations[c.capacity.Annotation],
		claimNames(pod),
	})
	return string(key)
}

// wholeJobByZone is, zone by zone, how many of the job's members its nodes hold at once
// (wholeJobIn), less the GPUs other jobs' plans hold there; a zone that holds all of them
// counts as the job's size plus how many more of its largest member it would still hold,
// so PlanZone's tightest fit and its message read as for a job of like members.
func wholeJobByZone(logger klog.Logger, nodes []fwk.NodeInfo, shapes []podShape, reserved map[string]int64, c config) map[string]int64 {
	byZone := map[string][]fwk.NodeInfo{}
	for _, info := range nodes {
		if zone := zoneOf(info.Node(), c.zone); zone != "" {
			byZone[zone] = append(byZone[zone], info)
		}
	}
	counts := make(map[string]int64, len(byZone))
	for zone, infos := range byZone {
		counts[zone] = wholeJobIn(logger, infos, shapes, reserved[zone], c)
	}
	return counts
}

// wholeJobIn is how many of the members the zone's nodes (infos) hold at once (placeWholeJob),
// after taking reservedGPUs from the nodes' free GPUs.
func wholeJobIn(logger klog.Logger, infos []fwk.NodeInfo, shapes []podShape, reservedGPUs int64, c config) int64 {
	free := make([]nodeFree, len(infos))
	for i, info := range infos {
		free[i] = freeOn(info)
		taken := min(max(free[i].scalars[c.gpu.GPUResource], 0), reservedGPUs)
		free[i].scalars[c.gpu.GPUResource] -= taken
		reservedGPUs -= taken
	}
	admitted := make([][]bool, len(shapes))
	for m, shape := range shapes {
		admitted[m] = make([]bool, len(infos))
		for i, info := range infos {
			admitted[m][i] = shape.admits(logger, info, c)
		}
	}
	return placeWholeJob(shapes, admitted, free)
}

// placeWholeJob places the members one by one, heaviest first (heavierFirst, ties in the
// given order), each on the first node that admits it (admitted[member][node]) and still has
// room in free (first-fit decreasing). It returns how many were placed, or, when all were,
// their number plus the copies of the heaviest member its admitting nodes still hold.
// policy/whole_job.py's whole_job_in is the same count, held to the same vectors.
func placeWholeJob(shapes []podShape, admitted [][]bool, free []nodeFree) int64 {
	order := make([]int, len(shapes))
	for m := range order {
		order[m] = m
	}
	slices.SortStableFunc(order, func(a, b int) int { return heavierFirst(shapes[a], shapes[b]) })
	var placed int64
	for _, m := range order {
		for i := range free {
			if admitted[m][i] && shapes[m].copiesIn(&free[i]) >= 1 {
				shapes[m].take(&free[i])
				placed++
				break
			}
		}
	}
	if placed < int64(len(shapes)) || len(shapes) == 0 {
		return placed
	}
	heaviest := order[0]
	for i := range free {
		if admitted[heaviest][i] {
			placed += shapes[heaviest].copiesIn(&free[i])
		}
	}
	return placed
}

// gpusOf is the GPUs the members request in all.
func gpusOf(shapes []podShape) int64 {
	var total int64
	for _, shape := range shapes {
		total += shape.gpus
	}
	return total
}
