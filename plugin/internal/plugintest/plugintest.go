// Package plugintest holds the checks the plugin packages' tests share; only tests import it.
package plugintest

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// ArgsCase is one pluginConfig args case: the settings the plugin should build from Args,
// or the error it should refuse them with.
type ArgsCase[S any] struct {
	Name    string
	Args    runtime.Object
	Want    S
	WantErr string
}

// CheckArgs builds the plugin from each case's args and compares the settings it holds;
// a refused case must fail with an error that starts "<plugin> args: " and names WantErr.
func CheckArgs[S any](t *testing.T, plugin string, cases []ArgsCase[S], build func(runtime.Object) (S, error)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			got, err := build(tt.Args)
			if tt.WantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.WantErr) || !strings.HasPrefix(err.Error(), plugin+" args: ") {
					t.Fatalf("error = %v, want one starting %q and containing %q", err, plugin+" args: ", tt.WantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if !reflect.DeepEqual(got, tt.Want) {
				t.Fatalf("settings = %+v, want %+v", got, tt.Want)
			}
		})
	}
}

// CheckEvents fails t unless the plugin registers exactly the events want, in order, each
// with a queueing hint.
func CheckEvents(t *testing.T, events []fwk.ClusterEventWithHint, want []fwk.ClusterEvent) {
	t.Helper()
	if len(events) != len(want) {
		t.Fatalf("got %d events, want %d", len(events), len(want))
	}
	for i, event := range events {
		if event.Event != want[i] {
			t.Errorf("event %d = %v, want %v", i, event.Event.Label(), want[i].Label())
		}
		if event.QueueingHintFn == nil {
			t.Errorf("event %d has no QueueingHint", i)
		}
	}
}
