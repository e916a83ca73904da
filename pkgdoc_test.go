// Package toolgate_test holds the repository's meta-tests.
package toolgate_test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageIsDocumented: every package says what it owns in a
// "// Package x ..." comment (or "// Command x ..." for a main), and no
// other comment sits on a package clause, where go doc would show it too.
func TestEveryPackageIsDocumented(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\t{{.Name}}\t{{join .GoFiles \" \"}}", "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		dir, name, files := f[0], f[1], strings.Fields(f[2])
		if len(files) == 0 {
			continue // tests only
		}
		documented := false
		for _, file := range files {
			path := filepath.Join(dir, file)
			ast, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Fatal(err)
			}
			if ast.Doc == nil {
				continue
			}
			doc := ast.Doc.Text()
			if !strings.HasPrefix(doc, "Package "+name+" ") && !strings.HasPrefix(doc, "Command ") {
				t.Errorf("%s: a comment on the package clause that go doc shows as the package's: %q", path, firstLine(doc))
				continue
			}
			documented = true
		}
		if !documented {
			t.Errorf("%s: package %s has no doc comment saying what it owns", dir, name)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
