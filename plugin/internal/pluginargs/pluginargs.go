// Package pluginargs decodes the pluginConfig args a KubeSchedulerConfiguration
// profile gives an out-of-tree plugin: strict JSON or YAML, unknown and repeated
// fields refused, so a typo stops the scheduler at start instead of being ignored.
package pluginargs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode fills into from what the framework passes a plugin's factory: nil (no
// pluginConfig entry, into is left as it is) or the raw args (*runtime.Unknown).
func Decode(obj runtime.Object, into any) error {
	switch typed := obj.(type) {
	case nil:
		return nil
	case *runtime.Unknown:
		return decodeRaw(typed, into)
	default:
		return fmt.Errorf("want *runtime.Unknown, got %T", obj)
	}
}

func decodeRaw(raw *runtime.Unknown, into any) error {
	data := raw.Raw
	switch raw.ContentType {
	case runtime.ContentTypeJSON, "":
	case runtime.ContentTypeYAML:
		converted, err := yaml.YAMLToJSON(data)
		if err != nil {
			return err
		}
		data = converted
	default:
		return fmt.Errorf("unsupported content type %q", raw.ContentType)
	}
	if len(data) == 0 {
		return nil
	}
	strict, err := kjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return fmt.Errorf("%v", strict)
	}
	return nil
}
