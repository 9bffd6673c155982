// Command gpu-scheduler is the upstream kube-scheduler with the GPUScheduler and
// CapacityType and JobZone plugins compiled in. Every built-in plugin is already registered by
// the upstream command; only ours are added, and a profile enables them like any other plugin.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"example.com/gpu-scheduler-eks/plugin/capacitytype"
	"example.com/gpu-scheduler-eks/plugin/gpuscheduler"
	"example.com/gpu-scheduler-eks/plugin/jobzone"
)

// registryOptions adds this binary's out-of-tree plugins to the scheduler's registry.
func registryOptions() []app.Option {
	return []app.Option{
		app.WithPlugin(gpuscheduler.Name, gpuscheduler.New),
		app.WithPlugin(capacitytype.Name, capacitytype.New),
		app.WithPlugin(jobzone.Name, jobzone.New),
	}
}

func main() {
	command := app.NewSchedulerCommand(registryOptions()...)
	os.Exit(cli.Run(command))
}
