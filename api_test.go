package mq_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/mqgo/mq"

// TestNoInternalTypesInAPI fails when an exported identifier of a non-internal package of this
// module names a type from an internal package: a user could not name it, and the internal
// package would become API by accident. The packages are read from the compiler's export data,
// which `go list -export` produces from the build cache, so test files (which may add such
// methods for the module's tests) are not part of what is checked.
func TestNoInternalTypesInAPI(t *testing.T) {
	imp, pkgs := exportImporter(t)
	checked := 0
	for _, path := range pkgs {
		if isInternal(path) {
			continue
		}
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		if pkg.Name() == "main" {
			continue
		}
		checked++
		for _, leak := range internalLeaks(pkg) {
			t.Error(leak)
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d packages of %v: the package list is wrong", checked, pkgs)
	}
}

// TestInternalLeaksFindsEachKind proves the checker on a package written to leak in every way it
// looks for, so that TestNoInternalTypesInAPI passing means something.
func TestInternalLeaksFindsEachKind(t *testing.T) {
	const src = `package leaky

import (
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/remoting"
)

type Alias = node.Options
type Opts struct{ Wiring *node.Options }
type Embeds struct{ *node.Node }
type hidden struct{ *node.Node }
type Promotes struct{ hidden }
type Private struct{ n *node.Node }
type Iface interface{ Node() *node.Node }
type Fine struct{ T remoting.Transport }

var V []map[string]*node.Node

func Start(o node.Options) error            { return nil }
func Get() (func() *node.Node, error)         { return nil, nil }
func (Private) Wire() chan *node.Node         { return nil }
func (Private) fine() *node.Node              { return nil }
func OK(remoting.Transport) (string, error)   { return "", nil }
`
	imp, _ := exportImporter(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "leaky.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: imp}).Check("example.com/leaky", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range internalLeaks(pkg) {
		got = append(got, strings.Fields(strings.TrimPrefix(l, "example.com/leaky."))[0])
	}
	want := []string{"Alias", "Embeds.Node", "Get", "Iface.Node", "Opts.Wiring", "Private.Wire",
		"Promotes.Addr", "Start", "V"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no leak reported for %s; reported %v", w, got)
		}
	}
	for _, g := range got {
		if g == "Fine" || g == "OK" || strings.HasPrefix(g, "Fine.") || g == "Private" {
			t.Errorf("%s reported though it names no internal type", g)
		}
	}
}

// exportImporter lists the module's packages and their dependencies with `go list -export`,
// returning an importer reading their export data and the module's package paths.
func exportImporter(t *testing.T) (types.Importer, []string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-export", "-json=ImportPath,Export,Module", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var ours []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export string
			Module             *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == modulePath {
			ours = append(ours, p.ImportPath)
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", lookup), ours
}

func isInternal(path string) bool {
	return strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") ||
		strings.HasSuffix(path, "/internal")
}

// internalLeaks describes every exported identifier of pkg whose type, fields, methods or
// embedded types name a type from an internal package.
func internalLeaks(pkg *types.Package) []string {
	var leaks []string
	report := func(name string, typ types.Type) {
		if n := internalIn(typ, map[types.Type]bool{}); n != "" {
			leaks = append(leaks, fmt.Sprintf("%s.%s names internal type %s", pkg.Path(), name, n))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			report(name, obj.Type())
			continue
		}
		if tn.IsAlias() {
			report(name, types.Unalias(tn.Type()))
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		switch u := named.Underlying().(type) {
		case *types.Struct:
			for i := range u.NumFields() {
				f := u.Field(i)
				if f.Exported() {
					report(name+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := range u.NumMethods() {
				if m := u.Method(i); m.Exported() {
					report(name+"."+m.Name(), m.Type())
				}
			}
			continue
		default:
			report(name, u)
		}
		// The pointer's method set holds the value's too, and every promoted method.
		ms := types.NewMethodSet(types.NewPointer(named))
		for i := range ms.Len() {
			m := ms.At(i).Obj()
			if !m.Exported() {
				continue
			}
			if p := m.Pkg(); p != nil && isInternal(p.Path()) {
				leaks = append(leaks, fmt.Sprintf("%s.%s.%s is promoted from internal package %s",
					pkg.Path(), name, m.Name(), p.Path()))
				continue
			}
			report(name+"."+m.Name(), m.Type())
		}
	}
	return leaks
}

// internalIn returns the first internal type typ names, or "". Named types of other packages
// are not entered (they are checked on their own when they are ours, and are not our API
// otherwise), except for their type arguments.
func internalIn(typ types.Type, seen map[types.Type]bool) string {
	if typ == nil || seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Alias:
		return internalIn(types.Unalias(t), seen)
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(p.Path()) {
			return t.String()
		}
		for i := range t.TypeArgs().Len() {
			if n := internalIn(t.TypeArgs().At(i), seen); n != "" {
				return n
			}
		}
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if n := internalIn(t.Key(), seen); n != "" {
			return n
		}
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				if n := internalIn(tup.At(i).Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() || f.Embedded() {
				if n := internalIn(f.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if n := internalIn(t.Method(i).Type(), seen); n != "" {
				return n
			}
		}
		for i := range t.NumEmbeddeds() {
			if n := internalIn(t.EmbeddedType(i), seen); n != "" {
				return n
			}
		}
	}
	return ""
}
