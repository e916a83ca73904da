package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaSet holds compiled JSON Schemas for tool inputs, by tool name. A
// policy has one from its "schemas"; the daemon builds more from the input
// schemas MCP servers publish. It is immutable once built.
type SchemaSet struct {
	byTool map[string]*jsonschema.Schema
}

// CompileSchemas compiles one JSON Schema (draft 2020-12 unless the schema
// says otherwise) per tool. References to other documents are refused: a
// schema never makes toolgate read a file or the network.
func CompileSchemas(schemas map[string]json.RawMessage) (*SchemaSet, error) {
	set := &SchemaSet{byTool: make(map[string]*jsonschema.Schema, len(schemas))}
	var errs []error
	for _, tool := range sortedKeys(schemas) {
		s, err := compileSchema(tool, schemas[tool])
		if err != nil {
			errs = append(errs, fmt.Errorf("schema for %s: %w", tool, err))
			continue
		}
		set.byTool[tool] = s
	}
	return set, errors.Join(errs...)
}

// Has reports whether the set has a schema for tool.
func (s *SchemaSet) Has(tool string) bool {
	return s != nil && s.byTool[tool] != nil
}

// Validate checks input against the tool's schema. It returns nil when the
// input is valid or the set has no schema for the tool, and a *SchemaError
// naming the first failing value otherwise.
func (s *SchemaSet) Validate(tool string, input []byte) error {
	if !s.Has(tool) {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return &SchemaError{Tool: tool, Msg: "input is not valid JSON"}
	}
	var verr *jsonschema.ValidationError
	if err := s.byTool[tool].Validate(inst); !errors.As(err, &verr) {
		return nil
	}
	leaf := firstLeaf(verr)
	msg := leaf.ErrorKind.LocalizedString(message.NewPrinter(language.English))
	return &SchemaError{Tool: tool, Pointer: pointer(leaf.InstanceLocation), Msg: msg}
}

// firstLeaf follows the first cause down to the innermost failure.
func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}

// Validate checks a call's input against the policy's schema for the tool
// or, when the policy has none, the discovered one. Policy schemas win.
func (p *Policy) Validate(tool string, input []byte, discovered *SchemaSet) error {
	if p.schemas.Has(tool) {
		return p.schemas.Validate(tool, input)
	}
	return discovered.Validate(tool, input)
}

func (l *loader) compileSchemas(schemas map[string]json.RawMessage) *SchemaSet {
	set := &SchemaSet{byTool: map[string]*jsonschema.Schema{}}
	for _, tool := range sortedKeys(schemas) {
		ptr := "/schemas/" + escapePointer(tool)
		if l.reported(ptr) {
			continue
		}
		s, err := compileSchema(tool, schemas[tool])
		if err != nil {
			l.add(ptr, "", fmt.Sprintf("schema for %s does not compile: %v", tool, err))
			continue
		}
		set.byTool[tool] = s
	}
	return set
}

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %s is not allowed", url)
}

func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	loc := "toolgate:///" + name
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
