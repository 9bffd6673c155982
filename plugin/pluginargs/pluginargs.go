// Package pluginargs decodes a plugin's pluginConfig args as kube-scheduler hands them
// to an out-of-tree plugin's factory: raw JSON or YAML in a *runtime.Unknown.
package pluginargs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode fills into from obj: nil (no pluginConfig entry) leaves it untouched; a
// *runtime.Unknown is decoded strictly (unknown or repeated fields are errors).
func Decode(obj runtime.Object, into any) error {
	switch typed := obj.(type) {
	case nil:
		return nil
	case *runtime.Unknown:
		return decodeUnknown(typed, into)
	default:
		return fmt.Errorf("want *runtime.Unknown, got %T", obj)
	}
}

func decodeUnknown(raw *runtime.Unknown, into any) error {
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
