package jobzone

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// NodeTakenFormat is the rejection of every held member of a job when the node of one of
// them was taken away while the job waited: job, node, member, why.
const NodeTakenFormat = "job %s: node %s of member %s was taken away while the job waited (%s); the job is placed again"

// watchNodes releases a waiting job at once when a node one of its held members was
// reserved on is deleted, begins to be taken away (gpupolicy.DisruptionSignal: being
// deleted, cordoned, a disruption taint) or gets a NoSchedule/NoExecute taint the member
// does not tolerate, instead of holding the rest of the job until permitTimeout. A node added
// or gaining room in a zone ends the skips of that zone that wait for room (zone_skips.go).
func (pl *JobZone) watchNodes(logger klog.Logger) error {
	informers := pl.handle.SharedInformerFactory()
	if informers == nil {
		return nil
	}
	_, err := informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if node, ok := obj.(*v1.Node); ok {
				pl.endRoomSkips(logger, zoneOf(node, pl.config.zone), "node "+node.Name+" added")
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			node, ok := newObj.(*v1.Node)
			if !ok {
				return
			}
			pl.releaseJobsOn(logger, node.Name, node)
			if old, ok := oldObj.(*v1.Node); ok && nodeGainedRoom(old, node, pl.config.zone.ZoneLabel) {
				pl.endRoomSkips(logger, zoneOf(node, pl.config.zone), "node "+node.Name+" gained room")
			}
		},
		DeleteFunc: func(obj interface{}) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if node, ok := obj.(*v1.Node); ok {
				pl.releaseJobsOn(logger, node.Name, nil)
			}
		},
	})
	return err
}

// releaseJobsOn rejects every held member of each job with a member held on the named
// node, when the node (nil: deleted) no longer stands for that member.
func (pl *JobZone) releaseJobsOn(logger klog.Logger, nodeName string, node *v1.Node) {
	type release struct {
		namespace, member, why string
		job                    *zonepolicy.Job
	}
	var releases []release
	seen := map[string]bool{}
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		pod := wp.GetPod()
		if pod.Spec.NodeName != nodeName {
			return
		}
		job, err := pl.declaredJob(pod)
		if err != nil || job == nil {
			return
		}
		if why := takenFrom(node, pod); why != "" && !seen[pod.Namespace+"/"+job.Name] {
			seen[pod.Namespace+"/"+job.Name] = true
			releases = append(releases, release{pod.Namespace, klog.KObj(pod).String(), why, job})
		}
	})
	for _, r := range releases {
		key := r.namespace + "/" + r.job.Name
		message := fmt.Sprintf(NodeTakenFormat, key, nodeName, r.member, r.why)
		logger.V(2).Info("a held member's node was taken away; releasing its job", "job", key,
			"node", nodeName, "member", r.member, "why", r.why)
		now := pl.clock.Now()
		pl.mu.Lock()
		pl.endHoldLocked(key, r.namespace, r.job, pl.gangs[key], message, HoldRejected, now)
		pl.mu.Unlock()
		pl.activateMembers(logger, r.namespace, r.job, "")
	}
}

// takenFrom says why the node no longer stands for the pod held on it, "" when it does:
// deleted (nil), being taken away, or tainted NoSchedule/NoExecute against the pod.
func takenFrom(node *v1.Node, pod *v1.Pod) string {
	if node == nil {
		return "deleted"
	}
	if signal := gpupolicy.DisruptionSignal(node); signal != "" {
		return signal
	}
	if taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, blocksScheduling, false); untolerated {
		return "taint " + taint.Key
	}
	return ""
}
