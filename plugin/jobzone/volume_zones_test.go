package jobzone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"example.com/gpu-scheduler-eks/plugin/zonepolicy"
)

// zonalVolume is a PersistentVolume in zone (an EBS volume's node affinity) bound to a claim
// of the same name in namespace ml.
func zonalVolume(name, zone string) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: zonepolicy.ZoneLabel, Operator: v1.NodeSelectorOpIn, Values: []string{zone},
			}}}},
		}}},
	}
	claim := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pv.Name},
	}
	return pv, claim
}

func mounting(pod *v1.Pod, claim string) *v1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
	return pod
}

func withVolumes(t *testing.T, h *harness, pvs []*v1.PersistentVolume, claims []*v1.PersistentVolumeClaim) {
	t.Helper()
	pvIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	claimIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, pv := range pvs {
		if err := pvIndexer.Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	for _, claim := range claims {
		if err := claimIndexer.Add(claim); err != nil {
			t.Fatal(err)
		}
	}
	h.plugin.volumes = &volumeListers{
		claims: corelisters.NewPersistentVolumeClaimLister(claimIndexer), volumes: corelisters.NewPersistentVolumeLister(pvIndexer),
	}
}

// Members that mount EBS volumes in B are planned in B, though A holds the job as well and
// comes first by name; a claim not bound to a volume yet holds the plan to no zone.
func TestTheJobIsPlannedWhereItsMembersVolumesAre(t *testing.T) {
	h := newHarness(t, nil)
	pv0, claim0 := zonalVolume("data-0", "b")
	pv1, claim1 := zonalVolume("data-1", "b")
	unbound := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "scratch", Namespace: "ml"}}
	withVolumes(t, h, []*v1.PersistentVolume{pv0, pv1}, []*v1.PersistentVolumeClaim{claim0, claim1, unbound})
	members := []*v1.Pod{mounting(member("llm", 0, 2, ""), "data-0"), mounting(member("llm", 1, 2, ""), "data-1")}
	podStore(t, h, members...)
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "a", 4), gpuNode("b1", "b", 4)})
	if result, status := h.preFilter(members[0]); !status.IsSuccess() || !result.NodeNames.Has("b1") || result.NodeNames.Has("a1") {
		t.Fatalf("volumes in B: %v %v, want B", result, status)
	}

	h = newHarness(t, nil)
	withVolumes(t, h, nil, []*v1.PersistentVolumeClaim{unbound})
	alike := []*v1.Pod{mounting(member("tmp", 0, 2, ""), "scratch"), mounting(member("tmp", 1, 2, ""), "scratch")}
	podStore(t, h, alike...)
	h.lister.set(nil, []*v1.Node{gpuNode("a1", "a", 4), gpuNode("b1", "b", 4)})
	if result, status := h.preFilter(alike[0]); !status.IsSuccess() || !result.NodeNames.Has("a1") {
		t.Fatalf("an unbound claim: %v %v, want A (first by name)", result, status)
	}
}
