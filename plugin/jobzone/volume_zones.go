package jobzone

import (
	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// volumeListers reads the PersistentVolumeClaims and PersistentVolumes of the scheduler's
// informers (the ones VolumeBinding reads); nil without an informer factory.
type volumeListers struct {
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
}

// volumeNodeSelectors returns the required node affinity of every PersistentVolume bound to
// a claim the pod mounts: an EBS volume lives in one zone, and its PV's node affinity says
// which, so a member that mounts it can run only there. A claim not yet bound (a
// WaitForFirstConsumer class chooses the zone at binding) or not found adds nothing: the
// VolumeBinding filter and JobZone's PostFilter decide those.
func (l *volumeListers) volumeNodeSelectors(pod *v1.Pod) []*nodeaffinity.LazyErrorNodeSelector {
	if l == nil {
		return nil
	}
	var selectors []*nodeaffinity.LazyErrorNodeSelector
	for _, volume := range pod.Spec.Volumes {
		if volume.PersistentVolumeClaim == nil {
			continue
		}
		claim, err := l.claims.PersistentVolumeClaims(pod.Namespace).Get(volume.PersistentVolumeClaim.ClaimName)
		if err != nil || claim.Spec.VolumeName == "" {
			continue
		}
		pv, err := l.volumes.Get(claim.Spec.VolumeName)
		if err != nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			continue
		}
		selectors = append(selectors, nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required))
	}
	return selectors
}

// claimNames are the claims the pod mounts, for shapeKey: members mounting different
// volumes may be held to different zones, so they are not alike.
func claimNames(pod *v1.Pod) []string {
	var names []string
	for _, volume := range pod.Spec.Volumes {
		if volume.PersistentVolumeClaim != nil {
			names = append(names, volume.PersistentVolumeClaim.ClaimName)
		}
	}
	return names
}
