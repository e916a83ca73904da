package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/api"
	"github.com/toolgate/toolgate/internal/schematest"
)

func articleDoc(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "article", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The approval record's schema is the design article's, verbatim; every schema
// compiles; the design article's own example documents are valid by them.
func TestSchemasAreTheArticles(t *testing.T) {
	approval, _ := api.Schema(api.SchemaApproval)
	if !bytes.Equal(approval, articleDoc(t, "approval.schema.json")) {
		t.Errorf("the approval record's schema is not the design article's, verbatim")
	}
	for _, name := range api.SchemaNames() {
		if _, err := schematest.Compile(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, ok := api.Schema("nosuch"); ok {
		t.Error("an unknown schema name was found")
	}
	for file, name := range map[string]string{"approval.json": api.SchemaApproval, "decision.json": api.SchemaDecision,
		"write-back.json": api.SchemaWriteBack, "permission-result.json": api.SchemaPermissionResult} {
		schematest.Validate(t, name, articleDoc(t, file))
	}
}

// Each document type's JSON fields are exactly its schema's properties:
// a field added to api.Approval, api.Decision or api.WriteBack fails here
// until its schema says so (and the schema refuses it in every document
// emitted meanwhile: additionalProperties is false).
func TestDocumentFieldsAreTheSchemas(t *testing.T) {
	for name, v := range map[string]any{api.SchemaApproval: api.Approval{}, api.SchemaDecision: api.Decision{},
		api.SchemaWriteBack: api.WriteBack{}} {
		raw, _ := api.Schema(name)
		var s struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		var props []string
		for p := range s.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if fields := jsonFields(reflect.TypeOf(v)); !slices.Equal(fields, props) {
			t.Errorf("%s: the Go type has fields %v, the schema %v", name, fields, props)
		}
		if s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: additionalProperties must be false", name)
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "-" && f.IsExported() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// A document with one field more than its schema allows is invalid: the
// schemas can fail.
func TestSchemasRefuseAnAddedField(t *testing.T) {
	for file, name := range map[string]string{"approval.json": api.SchemaApproval, "decision.json": api.SchemaDecision,
		"write-back.json": api.SchemaWriteBack, "permission-result.json": api.SchemaPermissionResult} {
		var doc map[string]any
		json.Unmarshal(articleDoc(t, file), &doc)
		doc["added"] = true
		data, _ := json.Marshal(doc)
		if schematest.Check(name, data) == nil {
			t.Errorf("%s accepted a field it does not describe: %s", name, data)
		}
	}
}

// A write-back reads and writes as the design article's: rule_id and reason_code
// are null when there are none, never left out.
func TestWriteBackNulls(t *testing.T) {
	w := api.WriteBack{ToolUseID: "toolu_1", Effect: api.EffectAsk}
	data, _ := json.Marshal(w)
	if string(data) != `{"tool_use_id":"toolu_1","effect":"ask","rule_id":null,"reason_code":null,"wrote_back":false}` {
		t.Errorf("%s", data)
	}
	var back api.WriteBack
	if err := json.Unmarshal(data, &back); err != nil || back != w {
		t.Errorf("read back %+v %v", back, err)
	}
	schematest.Validate(t, api.SchemaWriteBack, data)
}
