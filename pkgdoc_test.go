// Package toolgate_test holds the repository's meta-tests.
package toolgate_test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"
)

// TestEveryPackageIsDocumented: every package says what it owns in a
// "// Package x ..." comment (or "// Command x ..." for a main).
func TestEveryPackageIsDocumented(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		for name, pkg := range pkgs {
			if strings.HasSuffix(name, "_test") {
				continue
			}
			documented := false
			for _, f := range pkg.Files {
				if f.Doc != nil && (strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") || strings.HasPrefix(f.Doc.Text(), "Command ")) {
					documented = true
				}
			}
			if !documented {
				t.Errorf("%s: package %s has no doc comment saying what it owns", dir, name)
			}
		}
	}
}
