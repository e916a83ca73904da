// Package schematest validates the documents toolgate emits against the
// JSON Schemas it embeds (api.Schema's and the policy document's), with
// formats such as date-time asserted. Only tests import it.
package schematest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/api"
)

// Compile compiles the schema of a document by name (api.SchemaNames).
func Compile(name string) (*jsonschema.Schema, error) {
	raw, ok := api.Schema(name)
	if !ok {
		return nil, fmt.Errorf("no schema %q", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := "toolgate:" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Check validates one document against the schema of its kind.
func Check(name string, doc []byte) error {
	s, err := Compile(name)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("%s does not match the %s schema: %v", doc, name, err)
	}
	return nil
}

// Validate fails the test when doc does not match the schema of its kind.
func Validate(t testing.TB, name string, doc []byte) {
	t.Helper()
	if err := Check(name, doc); err != nil {
		t.Error(err)
	}
}
