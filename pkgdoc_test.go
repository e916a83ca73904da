// Package toolgate_test holds the repository's meta-tests.
package toolgate_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestArchitectureListsEveryPackageInOrder: docs/architecture.md lists
// every package (but internal helpers and tests), each in a row below the
// packages it imports, so that the folder list a newcomer reads is the
// code's.
func TestArchitectureListsEveryPackageInOrder(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]int{}
	cell := regexp.MustCompile("`([a-z0-9/-]+)`")
	for i, line := range strings.Split(string(doc), "\n") {
		first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		if !strings.HasPrefix(line, "| `") || !ok {
			continue
		}
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			row[strings.TrimSuffix(m[1], "/")] = i
		}
	}
	const module = "github.com/toolgate/toolgate/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || listedApart(pkg) {
			continue
		}
		at, listed := row[pkg]
		if !listed {
			t.Errorf("docs/architecture.md does not list %s", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || listedApart(dep) {
				continue
			}
			if row[dep] > at {
				t.Errorf("docs/architecture.md lists %s above %s, which it imports", pkg, dep)
			}
		}
	}
}

// listedApart: the packages the architecture's table leaves out.
func listedApart(pkg string) bool {
	return strings.HasPrefix(pkg, "internal/") || strings.Contains(pkg, "/internal/")
}
