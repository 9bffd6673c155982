// Package policyvectors loads the test vectors that the Go and Python policies
// share (tests/vectors/*.json at the repository root), so both implementations are
// held to the same cases. Only tests import it.
package policyvectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/gpu-scheduler-eks/plugin/gpupolicy"
)

// DirEnv names an environment variable that, when set, replaces the default vector
// directory (for trying a draft of the vectors without touching the shared files).
const DirEnv = "GPU_POLICY_VECTORS_DIR"

// Schema is the only vector schema version this loader understands.
const Schema = 1

// PolicyFile and QuantityFile are the vector file names inside the vector directory.
const (
	PolicyFile   = "policy_cases.json"
	QuantityFile = "quantity_cases.json"
)

// Dir returns the vector directory: $GPU_POLICY_VECTORS_DIR, or tests/vectors found
// by walking up from the working directory (a package directory under go test).
func Dir() (string, error) {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir, nil
	}
	start, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := start; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, "tests", "vectors")
		if info, err := os.Stat(candidate); err == nil && info.IsDir() {
			return candidate, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no tests/vectors directory above %s (set %s to point at one)", start, DirEnv)
		}
	}
}

// PolicyCases is the content of policy_cases.json.
type PolicyCases struct {
	Schema      int            `json:"schema"`
	Description string         `json:"description"`
	Settings    SettingsFields `json:"settings"`
	Cases       []PolicyCase   `json:"cases"`
}

// SettingsFields are the policy settings the vectors were written for.
type SettingsFields struct {
	MinMemoryAnnotation string `json:"min_memory_annotation"`
	NodeMemoryLabel     string `json:"node_memory_label"`
	GPUResource         string `json:"gpu_resource"`
	ScoreScaleMiB       int64  `json:"score_scale_mib"`
	ScoringStrategy     string `json:"scoring_strategy"`
	// VendorMemoryLabels and InstanceTypeGPUMemoryMiB are the GPU-memory schemes'
	// settings (gpupolicy.Settings' fields of the same names).
	VendorMemoryLabels       []string         `json:"vendor_memory_labels"`
	InstanceTypeGPUMemoryMiB map[string]int64 `json:"instance_type_gpu_memory_mib"`
}

// Settings converts the file's settings into validated policy settings.
func (f SettingsFields) Settings() (gpupolicy.Settings, error) {
	s := gpupolicy.Settings{
		MinMemoryAnnotation: f.MinMemoryAnnotation,
		NodeMemoryLabel:     f.NodeMemoryLabel,
		GPUResource:         v1.ResourceName(f.GPUResource),
		ScoreScaleMiB:       f.ScoreScaleMiB,
		ScoringStrategy:     f.ScoringStrategy,
		// As Python's PolicySettings reads them: a list and a table, never nil.
		VendorMemoryLabels:       append([]string{}, f.VendorMemoryLabels...),
		InstanceTypeGPUMemoryMiB: maps.Clone(f.InstanceTypeGPUMemoryMiB),
	}
	if s.InstanceTypeGPUMemoryMiB == nil {
		s.InstanceTypeGPUMemoryMiB = map[string]int64{}
	}
	return s, s.Validate()
}

// override returns the file's settings with the fields a case sets replaced (the
// case's keys are the file's keys; an unknown key is an error). A table the case
// sets replaces the file's whole, as Python's {**file, **case} does (encoding/json
// would otherwise add its entries to the file's map).
func (f SettingsFields) override(raw json.RawMessage) (SettingsFields, error) {
	table := f.InstanceTypeGPUMemoryMiB
	f.InstanceTypeGPUMemoryMiB = nil
	fields, err := overridden(f, raw)
	if fields.InstanceTypeGPUMemoryMiB == nil {
		fields.InstanceTypeGPUMemoryMiB = table
	}
	return fields, err
}

// overridden returns fields with the keys raw sets replaced; an unknown key is an error.
func overridden[T any](fields T, raw json.RawMessage) (T, error) {
	if len(raw) == 0 {
		return fields, nil
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	err := decoder.Decode(&fields)
	return fields, err
}

// PolicyCase is one pod/node pair and what the policy must say about it.
type PolicyCase struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// SettingsOverride is the case's own settings, overriding some of the file's.
	SettingsOverride json.RawMessage `json:"settings,omitempty"`
	Pod              json.RawMessage `json:"pod"`
	Node             json.RawMessage `json:"node"`
	Expect           Expectation     `json:"expect"`
	// Settings are the validated settings of this case (the file's, overridden by
	// the case's own); LoadPolicy fills them.
	Settings gpupolicy.Settings `json:"-"`
}

// Expectation is the policy's expected answer for a case.
type Expectation struct {
	// DecodeError is "pod" or "node" when that JSON must not decode; nothing else is checked then.
	DecodeError string `json:"decode_error"`
	// Error is FromPod's exact error text, or nil when FromPod succeeds.
	Error       *string              `json:"error"`
	Requirement *ExpectedRequirement `json:"requirement"`
	// Fits, Reason, Score100 and ExtenderScore are present when Requirement is.
	Fits          *bool   `json:"fits"`
	Reason        *string `json:"reason"`
	Score100      *int64  `json:"score_100"`
	ExtenderScore *int64  `json:"extender_score"`
}

// ExpectedRequirement mirrors gpupolicy.Requirement in the vector's spelling.
type ExpectedRequirement struct {
	HasGPU       bool  `json:"has_gpu"`
	MinMemoryMiB int64 `json:"min_memory_mib"`
}

// Requirement converts to the policy's type.
func (r ExpectedRequirement) Requirement() gpupolicy.Requirement {
	return gpupolicy.Requirement{HasGPU: r.HasGPU, MinMemoryMiB: r.MinMemoryMiB}
}

// DecodePod decodes the case's pod with encoding/json; JSON null gives a nil pod.
func (c PolicyCase) DecodePod() (*v1.Pod, error) {
	if isNull(c.Pod) {
		return nil, nil
	}
	pod := &v1.Pod{}
	if err := json.Unmarshal(c.Pod, pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// DecodeNode decodes the case's node with encoding/json; JSON null gives a nil node.
func (c PolicyCase) DecodeNode() (*v1.Node, error) {
	if isNull(c.Node) {
		return nil, nil
	}
	node := &v1.Node{}
	if err := json.Unmarshal(c.Node, node); err != nil {
		return nil, err
	}
	return node, nil
}

func isNull(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
}

// QuantityCases is the content of quantity_cases.json.
type QuantityCases struct {
	Schema      int            `json:"schema"`
	Description string         `json:"description"`
	Cases       []QuantityCase `json:"cases"`
}

// QuantityCase is the raw JSON text of a quantity and its exact value, or nil where
// Go must refuse it.
type QuantityCase struct {
	JSON  string  `json:"json"`
	Value *string `json:"value"`
}

// LoadPolicy reads and checks policy_cases.json from dir.
func LoadPolicy(dir string) (PolicyCases, error) {
	var file PolicyCases
	if err := load(filepath.Join(dir, PolicyFile), &file); err != nil {
		return file, err
	}
	if file.Schema != Schema {
		return file, fmt.Errorf("%s: schema %d, this loader reads %d", PolicyFile, file.Schema, Schema)
	}
	seen := make(map[string]bool, len(file.Cases))
	for i, c := range file.Cases {
		if c.Name == "" || seen[c.Name] {
			return file, fmt.Errorf("%s: case %d: name %q is empty or repeated", PolicyFile, i, c.Name)
		}
		seen[c.Name] = true
		if err := c.Expect.check(); err != nil {
			return file, fmt.Errorf("%s: case %q: %w", PolicyFile, c.Name, err)
		}
		fields, err := file.Settings.override(c.SettingsOverride)
		if err != nil {
			return file, fmt.Errorf("%s: case %q: settings: %w", PolicyFile, c.Name, err)
		}
		if file.Cases[i].Settings, err = fields.Settings(); err != nil {
			return file, fmt.Errorf("%s: case %q: settings: %w", PolicyFile, c.Name, err)
		}
	}
	return file, nil
}

// MustLoadPolicy loads the policy vectors (each case with its settings) for a test,
// failing it on any error; it also returns the directory they came from (Dir).
func MustLoadPolicy(t testing.TB) (PolicyCases, string) {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	file, err := LoadPolicy(dir)
	if err != nil {
		t.Fatal(err)
	}
	return file, dir
}

func (e Expectation) check() error {
	switch e.DecodeError {
	case "":
	case "pod", "node":
		return nil
	default:
		return fmt.Errorf("decode_error must be \"pod\" or \"node\", got %q", e.DecodeError)
	}
	verdict := e.Fits != nil && e.Reason != nil && e.Score100 != nil && e.ExtenderScore != nil
	if e.Requirement != nil && !verdict {
		return fmt.Errorf("a requirement needs fits, reason, score_100 and extender_score")
	}
	if e.Error == nil && e.Requirement == nil {
		return fmt.Errorf("expect needs error or requirement")
	}
	return nil
}

// LoadQuantities reads and checks quantity_cases.json from dir.
func LoadQuantities(dir string) (QuantityCases, error) {
	var file QuantityCases
	if err := load(filepath.Join(dir, QuantityFile), &file); err != nil {
		return file, err
	}
	if file.Schema != Schema {
		return file, fmt.Errorf("%s: schema %d, this loader reads %d", QuantityFile, file.Schema, Schema)
	}
	return file, nil
}

func load(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Decimal is an exact decimal number: Unscaled × 10^Exponent, with no trailing zeros
// in Unscaled (so equal values have equal fields).
type Decimal struct {
	Unscaled *big.Int
	Exponent int64
}

var decimalText = regexp.MustCompile(`^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?$`)

// ParseDecimal reads a decimal string such as "1536", "-0.001" or "1.5E+3".
func ParseDecimal(text string) (Decimal, error) {
	m := decimalText.FindStringSubmatch(text)
	if m == nil || m[2]+m[3] == "" {
		return Decimal{}, fmt.Errorf("%q is not a decimal number", text)
	}
	digits := m[2] + m[3]
	unscaled, _ := new(big.Int).SetString(digits, 10)
	exponent := -int64(len(m[3]))
	if m[4] != "" {
		var e big.Int
		if _, ok := e.SetString(strings.TrimPrefix(m[4], "+"), 10); !ok || !e.IsInt64() {
			return Decimal{}, fmt.Errorf("%q has an exponent out of range", text)
		}
		exponent += e.Int64()
	}
	if m[1] == "-" {
		unscaled.Neg(unscaled)
	}
	return normalized(unscaled, exponent), nil
}

// QuantityDecimal returns a Quantity's exact value. It reads the unscaled digits and
// the scale rather than printing the value, so a huge exponent costs nothing.
func QuantityDecimal(q *resource.Quantity) Decimal {
	dec := q.AsDec()
	return normalized(new(big.Int).Set(dec.UnscaledBig()), -int64(dec.Scale()))
}

func normalized(unscaled *big.Int, exponent int64) Decimal {
	if unscaled.Sign() == 0 {
		return Decimal{Unscaled: unscaled, Exponent: 0}
	}
	ten := big.NewInt(10)
	var quotient, remainder big.Int
	for {
		quotient.QuoRem(unscaled, ten, &remainder)
		if remainder.Sign() != 0 {
			return Decimal{Unscaled: unscaled, Exponent: exponent}
		}
		unscaled.Set(&quotient)
		exponent++
	}
}

// Equal reports whether two decimals have the same value.
func (d Decimal) Equal(other Decimal) bool {
	return d.Exponent == other.Exponent && d.Unscaled.Cmp(other.Unscaled) == 0
}

// String shows the value as digits and a power of ten, e.g. "15e2".
func (d Decimal) String() string {
	return fmt.Sprintf("%se%d", d.Unscaled, d.Exponent)
}

// versioned is a vector file's content, which names its schema.
type versioned interface{ schemaVersion() int }

func (f ZoneCases) schemaVersion() int { return f.Schema }

// mustLoadFile reads the named vector file into into and checks its schema, for a test.
func mustLoadFile(t testing.TB, name string, into versioned) {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if err := load(filepath.Join(dir, name), into); err != nil {
		t.Fatal(err)
	}
	if version := into.schemaVersion(); version != Schema {
		t.Fatalf("%s: schema %d, this loader reads %d", name, version, Schema)
	}
}

// MustDecodePod decodes a case's pod; when decodeError is "pod" the pod must not decode,
// and ok is false (the case is done).
func MustDecodePod(t testing.TB, raw json.RawMessage, decodeError string) (pod *v1.Pod, ok bool) {
	t.Helper()
	pod = &v1.Pod{}
	err := json.Unmarshal(raw, pod)
	if decodeError == "pod" {
		if err == nil {
			t.Fatalf("the pod decoded, but the vector says Go must refuse it")
		}
		return nil, false
	}
	if err != nil {
		t.Fatalf("decoding the pod: %v", err)
	}
	return pod, true
}

// MustMatchError checks err against the case's expected error text (nil: none); ok is
// false when an error was expected (the case is done).
func MustMatchError(t testing.TB, err error, want *string) (ok bool) {
	t.Helper()
	if want != nil {
		if err == nil || err.Error() != *want {
			t.Fatalf("error = %v, want %q", err, *want)
		}
		return false
	}
	if err != nil {
		t.Fatalf("error = %v, want none", err)
	}
	return true
}
