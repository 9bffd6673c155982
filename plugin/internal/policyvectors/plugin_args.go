package policyvectors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// SchemaPluginArgsFile is the pluginConfig the stack renders with every setting of
// policy/setting_schema.py that names a plugin arg set to a value other than its default.
const SchemaPluginArgsFile = "schema_plugin_args.yaml"

// MustLoadSchemaPluginArgs returns plugin's entry of SchemaPluginArgsFile as the framework
// hands args to a plugin's factory (raw JSON in a *runtime.Unknown).
func MustLoadSchemaPluginArgs(t testing.TB, plugin string) *runtime.Unknown {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, SchemaPluginArgsFile))
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	if err := yaml.UnmarshalStrict(text, &entries); err != nil {
		t.Fatalf("%s: %v", SchemaPluginArgsFile, err)
	}
	for _, entry := range entries {
		if entry.Name == plugin {
			return &runtime.Unknown{Raw: entry.Args, ContentType: runtime.ContentTypeJSON}
		}
	}
	t.Fatalf("%s has no entry for %s", SchemaPluginArgsFile, plugin)
	return nil
}
