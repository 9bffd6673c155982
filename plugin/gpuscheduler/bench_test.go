//go:build unix

package gpuscheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
	"example.com/gpu-scheduler-eks/plugin/internal/policyvectors"
)

// benchNodeCount is how many distinct nodes the benchmarks cycle through: the
// candidate count of a ~3,100-node cluster at the scheduler's default
// percentageOfNodesToScore (docs/serving.md#sizing-the-limits), so the nodes' label maps
// are not all hot in the CPU cache.
const benchNodeCount = 780

// benchMemories are the per-GPU labels the benchmark nodes cycle through (T4, A10G,
// A100, L40S, H100, H200): a 40960 MiB pod passes four of every six.
var benchMemories = []string{"16384", "22888", "40960", "45776", "81920", "144384"}

// realisticNodes derives distinct nodes from testbed/eks_gpu_node.json, an
// EKS GPU node as the API server serves it (101 labels, managedFields, images).
func realisticNodes(b *testing.B, count int) []*v1.Node {
	b.Helper()
	dir, err := policyvectors.Dir()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "..", "..", "testbed", "eks_gpu_node.json"))
	if err != nil {
		b.Fatal(err)
	}
	nodes := make([]*v1.Node, count)
	for i := range nodes {
		node := &v1.Node{}
		if err := json.Unmarshal(data, node); err != nil {
			b.Fatal(err)
		}
		node.Name = fmt.Sprintf("ip-10-42-%d-%d.ec2.internal", 16+i/250, 4+i%250)
		node.ResourceVersion = fmt.Sprint(48_000_000 + i)
		node.Labels["kubernetes.io/hostname"] = node.Name
		node.Labels[gpupolicy.NodeMemoryLabel] = benchMemories[i%len(benchMemories)]
		nodes[i] = node
	}
	return nodes
}

// benchSetup is one scheduling cycle's worth of inputs: the plugin, a 40960 MiB pod
// after PreFilter, and a NodeInfo per realistic node. With cached, the plugin's
// label cache holds every node, as the Node informer's handlers fill it; without,
// Filter and Score read the label on every call (the plugin before the cache).
func benchSetup(b *testing.B, cached bool) (*GPUScheduler, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) {
	b.Helper()
	plugin, err := New(context.Background(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	pl := plugin.(*GPUScheduler)
	nodes := realisticNodes(b, benchNodeCount)
	if cached {
		pl.nodes = newNodeMemoryCache(pl.settings)
		for _, node := range nodes {
			pl.nodes.handlers().OnAdd(node, true)
		}
	}
	infos := make([]fwk.NodeInfo, len(nodes))
	for i, node := range nodes {
		info := framework.NewNodeInfo()
		info.SetNode(node)
		infos[i] = info
	}
	pod := gpuPod("1", "40960")
	state := framework.NewCycleState()
	if _, status := pl.PreFilter(context.Background(), state, pod, nil); !status.IsSuccess() {
		b.Fatalf("PreFilter: %v", status)
	}
	return pl, state, pod, infos
}

// filterAndScore is what the scheduler asks of the plugin for one node: Filter, then
// Score if the node passed. It returns the score (0 for a rejected node).
func filterAndScore(pl *GPUScheduler, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) int64 {
	ctx := context.Background()
	if status := pl.Filter(ctx, state, pod, info); !status.IsSuccess() {
		return 0
	}
	score, _ := pl.Score(ctx, state, pod, info)
	return score
}

// processCPU is the CPU time this process has used (user + system). The benchmarks
// report it per node as cpu-ns/op beside Go's wall-clock ns/op, because on a shared
// machine the wall clock also counts the time other processes held the CPU.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// reportCPU adds the cpu-ns/op metric for the b.N operations since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
}

// benchVariants are the two ways the plugin can get a node's label.
var benchVariants = []struct {
	name   string
	cached bool
}{{"label-read-per-call", false}, {"label-cached-per-node", true}}

// BenchmarkFilterScore is Filter+Score per node (ns/op is per node), one goroutine:
//
//	cd plugin && go test -run '^$' -bench FilterScore -benchmem ./gpuscheduler
func BenchmarkFilterScore(b *testing.B) {
	for _, variant := range benchVariants {
		b.Run(variant.name, func(b *testing.B) {
			pl, state, pod, infos := benchSetup(b, variant.cached)
			b.ResetTimer()
			start := processCPU(b)
			var total int64
			for i := 0; i < b.N; i++ {
				total += filterAndScore(pl, state, pod, infos[i%len(infos)])
			}
			reportCPU(b, start)
			if total == 0 && b.N >= len(infos) {
				b.Fatal("no node passed")
			}
		})
	}
}

// BenchmarkFilterScoreParallel is the same on GOMAXPROCS goroutines at once, as the
// scheduler's parallelizer runs Filter and Score.
func BenchmarkFilterScoreParallel(b *testing.B) {
	for _, variant := range benchVariants {
		b.Run(variant.name, func(b *testing.B) {
			pl, state, pod, infos := benchSetup(b, variant.cached)
			b.ResetTimer()
			start := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					filterAndScore(pl, state, pod, infos[i%len(infos)])
					i++
				}
			})
			reportCPU(b, start)
		})
	}
}
