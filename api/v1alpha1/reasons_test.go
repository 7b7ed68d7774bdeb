package v1alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestEveryReasonIsDocumented: every condition and Event reason declared here (constants named
// Reason… or Event…) has a row or a mention in docs/troubleshooting.md, so an operator who meets
// it finds what it means.
func TestEveryReasonIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "common_types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") && !strings.HasPrefix(name.Name, "Event") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				found++
				if !strings.Contains(string(doc), "`"+value+"`") {
					t.Errorf("%s (%q) is not in docs/troubleshooting.md", name.Name, value)
				}
			}
		}
	}
	if found < 20 {
		t.Fatalf("found %d reasons in common_types.go; the parse missed them", found)
	}
}
