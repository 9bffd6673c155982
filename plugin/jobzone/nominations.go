package jobzone

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// A member held at Permit is nominated to its node in the API: kube-scheduler 1.35 writes
// status.nominatedNodeName before the Permit wait (NominatedNodeNameForExpectation, on by
// default), so the cluster autoscaler, Karpenter and kube-scheduler's own Filter (which counts
// a nominated pod against pods of equal or lower priority on that node) see the job's hold.
// When the hold ends without a bind, kube-scheduler does not take that nomination back: its
// failure handler computes the change from the pod as it came out of the queue, which had none,
// so the write leaves the field as it is. A nominated pod is one Karpenter never provisions for,
// and one kube-scheduler keeps counting on that node. JobZone therefore clears the nomination
// itself whenever a member is unreserved, which every path that gives a member up goes through
// (the job's deadline, a zone given up, a node taken away, preemption, a failed bind).

// NominationClearTimeout bounds the API write that clears a given-up member's nomination.
const NominationClearTimeout = 10 * time.Second

// nominationPatch is the JSON patch that removes a pod's status.nominatedNodeName only while
// it still names node: a member nominated again since (a new hold on the same or another node)
// keeps its new nomination, and a pod with none is left alone.
func nominationPatch(node string) ([]byte, error) {
	return json.Marshal([]map[string]string{
		{"op": "test", "path": "/status/nominatedNodeName", "value": node},
		{"op": "remove", "path": "/status/nominatedNodeName"},
	})
}

// clearNomination removes, in the background, the member's nomination of the node it was
// unreserved from. A pod already gone or nominated elsewhere is no error; other failures are
// logged (the nomination then stays until kube-scheduler's next attempt at the pod clears it).
func (pl *JobZone) clearNomination(logger klog.Logger, pod *v1.Pod, node string) {
	client := pl.handle.ClientSet()
	if client == nil || node == "" {
		return
	}
	patch, err := nominationPatch(node)
	if err != nil {
		logger.Error(err, "encoding the nomination patch", "pod", klog.KObj(pod))
		return
	}
	namespace, name := pod.Namespace, pod.Name
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), NominationClearTimeout)
		defer cancel()
		_, err := client.CoreV1().Pods(namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}, "status")
		switch {
		case err == nil:
			logger.V(3).Info("cleared a given-up member's nomination", "pod", klog.KRef(namespace, name), "node", node)
		case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err):
			// Gone, or no longer nominated to that node (the patch's test failed).
			logger.V(4).Info("member's nomination left as it is", "pod", klog.KRef(namespace, name), "node", node, "reason", err.Error())
		default:
			logger.Error(err, "clearing a given-up member's nomination", "pod", klog.KRef(namespace, name), "node", node)
		}
	}()
}
