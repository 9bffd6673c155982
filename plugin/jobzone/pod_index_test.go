package jobzone

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// schedulerPodInformer registers the pod informer as kube-scheduler does (scheduler.go's
// newPodInformer): terminal pods filtered out, and no index.
func schedulerPodInformer(factory informers.SharedInformerFactory) cache.SharedIndexInformer {
	return factory.InformerFor(&v1.Pod{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, resync, cache.Indexers{}, func(options *metav1.ListOptions) {
			options.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
		})
	})
}

func TestTheSchedulersPodInformerGetsANamespaceIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	informer := schedulerPodInformer(factory)
	if _, ok := informer.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
		t.Fatal("kube-scheduler's pod informer should start without a namespace index")
	}
	handle, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithInformerFactory(factory))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, nil, handle); err != nil {
		t.Fatal(err)
	}
	for _, pod := range []*v1.Pod{member("llm", 0, 2, ""), member("llm", 1, 2, "")} {
		if err := informer.GetIndexer().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	listed, err := informer.GetIndexer().ByIndex(cache.NamespaceIndex, "ml")
	if err != nil {
		t.Fatalf("the namespace index is missing after New: %v", err)
	}
	if len(listed) != 2 {
		t.Fatalf("namespace ml through the index: %d pods, want 2", len(listed))
	}
	if err := indexPodsByNamespace(informer); err != nil {
		t.Fatalf("a second plugin on the same informer: %v", err)
	}
}
