package policy

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed schema.json
var documentSchema []byte

// DocumentSchema returns the JSON Schema (2020-12) that every policy
// document is validated against before it is compiled.
func DocumentSchema() []byte { return bytes.Clone(documentSchema) }

// compiledDocumentSchema is documentSchema compiled, once a process: the
// compilation (the schema checked against its metaschema, its patterns
// compiled) is most of what parsing a small policy costs, and the daemon
// parses one at every session it registers.
var compiledDocumentSchema = sync.OnceValue(func() *jsonschema.Schema {
	schema, err := compileSchema("policy-v1.json", documentSchema)
	if err != nil {
		panic("policy: embedded document schema does not compile: " + err.Error())
	}
	return schema
})

// Prepare compiles ahead what every Parse uses: a daemon calls it as it
// starts, so that the first session it registers does not wait for it.
func Prepare() { compiledDocumentSchema() }

// Load reads and parses the policy file at path.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	return Parse(path, data)
}

// Parse compiles a policy document. name is used in error messages only. On
// failure the error is a LoadErrors listing every problem found.
func Parse(name string, data []byte) (*Policy, error) {
	l := &loader{name: name, data: data}
	p := l.load()
	if len(l.errs) > 0 {
		sort.SliceStable(l.errs, func(i, j int) bool {
			a, b := l.errs[i], l.errs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return nil, l.errs
	}
	return p, nil
}

type loader struct {
	name string
	data []byte
	pos  positions
	errs LoadErrors
	// lists are the document's path lists, for path_in and argument_in.
	lists map[string][]string
}

func (l *loader) load() *Policy {
	pos, err := scanPositions(l.data)
	if err != nil {
		l.syntaxError(err)
		return nil
	}
	l.pos = pos
	valid := l.validateDocument()
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(l.data))
	if valid {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&doc); err != nil {
		if valid {
			l.add("", "", err.Error())
		}
		return nil
	}
	sum := sha256.Sum256(l.data)
	p := &Policy{
		Version: doc.Version,
		Default: doc.Default,
		SHA256:  hex.EncodeToString(sum[:]),
		doc:     doc,
	}
	// Rules and schemas compile even when the document failed its schema,
	// so that one pass reports every problem; a rule the schema rejected
	// is skipped here.
	l.lists = l.checkLists(doc.Paths)
	p.rules = l.compileRules(doc.Rules)
	p.warnings = l.warnRules(doc.Rules)
	p.schemas = l.compileSchemas(doc.Schemas)
	p.index()
	if len(l.errs) == 0 {
		l.runTests(p, doc.Tests)
	}
	return p
}

func (l *loader) syntaxError(err error) {
	off, ok := syntaxOffset(err)
	if !ok {
		off = len(l.data) // truncated document
	}
	line, col := lineCol(l.data, off)
	msg := "invalid JSON: " + err.Error()
	if _, dup := err.(*duplicateKeyError); !dup {
		msg += " (policy files are strict JSON: no comments, no trailing commas)"
	}
	l.errs = append(l.errs, &LoadError{File: l.name, Line: line, Col: col, Msg: msg})
}

// add records a problem at the JSON pointer ptr ("" for the whole document).
func (l *loader) add(ptr, ruleID, msg string) {
	e := l.at(ptr, ruleID, msg)
	if e.RuleID == "" {
		e.RuleID = l.ruleAt(ptr)
	}
	l.errs = append(l.errs, e)
}

// reported reports whether a problem was already found at ptr or inside it.
func (l *loader) reported(ptr string) bool {
	for _, e := range l.errs {
		if e.ptr == ptr || strings.HasPrefix(e.ptr, ptr+"/") {
			return true
		}
	}
	return false
}

// ruleAt names the rule that a pointer such as /rules/3/input lies in.
func (l *loader) ruleAt(ptr string) string {
	rest, ok := strings.CutPrefix(ptr, "/rules/")
	if !ok {
		return ""
	}
	idx, _, _ := strings.Cut(rest, "/")
	if _, err := strconv.Atoi(idx); err != nil {
		return ""
	}
	return gjson.GetBytes(l.data, "rules."+idx+".id").String()
}

func (l *loader) validateDocument() bool {
	schema := compiledDocumentSchema()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(l.data))
	if err != nil {
		l.add("", "", "invalid JSON: "+err.Error())
		return false
	}
	verr, ok := schema.Validate(inst).(*jsonschema.ValidationError)
	if !ok || verr == nil {
		return true
	}
	printer := message.NewPrinter(language.English)
	for _, leaf := range leaves(verr) {
		ptr := pointer(leaf.InstanceLocation)
		l.add(ptr, "", describeKind(leaf.ErrorKind.LocalizedString(printer), ptr))
	}
	return false
}

// describeKind turns a validator message into one a policy author reads.
func describeKind(msg, ptr string) string {
	if ptr == "" {
		return msg
	}
	return ptr[1:] + ": " + msg
}

// leaves returns the innermost errors of a validation tree, deduplicated.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(escapePointer(tok))
	}
	return b.String()
}
