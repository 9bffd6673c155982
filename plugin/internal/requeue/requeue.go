// Package requeue holds the queueing hints the GPU plugins share. A pod one of them rejected
// goes back to the active queue only for a change that can make it pass that plugin: a node
// that passes the plugin's rule now and did not before, or an update of the pod itself that
// made its requirement valid or relaxed it. Every other event is skipped, so a cluster where
// nodes change all the time does not keep retrying pods no change has helped.
package requeue

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// Rule is one plugin's requirement as the hints need it. R is what the plugin reads from a pod.
type Rule[R any] struct {
	// Plugin names the plugin in log lines.
	Plugin string
	// FromPod reads the pod's requirement; an error means the pod is invalid, which no node
	// change can help.
	FromPod func(*v1.Pod) (R, error)
	// Unconstrained reports whether the plugin passes every node for this requirement; such a
	// pod is requeued by any node event, since this plugin cannot be what still blocks it.
	Unconstrained func(R) bool
	// Fits reports whether the node passes the plugin for this requirement.
	Fits func(R, *v1.Node) bool
	// Relaxed reports whether the pod's new requirement can pass where the old one could not.
	Relaxed func(old, new R) bool
}

// AfterNodeChange is the hint for a node added or updated: Queue when the new node passes and
// the old one (if any) did not.
func (r Rule[R]) AfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	req, err := r.FromPod(pod)
	if err != nil {
		logger.V(5).Info("pod is invalid for the plugin; a node change cannot help", "plugin", r.Plugin, "pod", klog.KObj(pod), "reason", err.Error())
		return fwk.QueueSkip, nil
	}
	if r.Unconstrained(req) {
		return fwk.Queue, nil
	}
	if !r.Fits(req, newNode) {
		logger.V(5).Info("node still does not pass the plugin", "plugin", r.Plugin, "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	if oldNode != nil && r.Fits(req, oldNode) {
		logger.V(5).Info("node passed the plugin before the update too", "plugin", r.Plugin, "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	logger.V(4).Info("node now passes the plugin", "plugin", r.Plugin, "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.Queue, nil
}

// AfterPodUpdate is the hint for an update of the pending pod itself: Queue when its
// requirement became valid or was relaxed.
func (r Rule[R]) AfterPodUpdate(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, newPod, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if newPod == nil || newPod.UID != pod.UID {
		return fwk.QueueSkip, nil
	}
	newReq, err := r.FromPod(newPod)
	if err != nil {
		logger.V(5).Info("updated pod is still invalid for the plugin", "plugin", r.Plugin, "pod", klog.KObj(newPod), "reason", err.Error())
		return fwk.QueueSkip, nil
	}
	oldReq, err := r.FromPod(oldPod)
	if err != nil || r.Relaxed(oldReq, newReq) {
		logger.V(4).Info("pod's requirement was corrected or relaxed", "plugin", r.Plugin, "pod", klog.KObj(newPod))
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
