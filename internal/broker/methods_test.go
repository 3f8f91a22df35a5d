package broker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxMethods is how many methods one type of the package may declare (issue 27: no type over
// about 60), Broker included, so that a new request family becomes a type of its own (sender,
// puller, clientManager, querier) or a service package, and what services
// need of the core goes on a view (Topics, Groups, Offsets, Clients, Messages, Seams), not more
// methods on Broker.
const maxMethods = 60

// The limit holds in every package of the broker's tree, the services and the packages below
// the core included: moving a god type into a subpackage does not make it smaller.
func TestNoTypeOverMaxMethods(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	counts := map[string]int{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				key := id.Name
				if dir := filepath.Dir(name); dir != "." {
					key = filepath.ToSlash(dir) + "." + id.Name
				}
				counts[key]++
			}
		}
	}
	if counts["Broker"] == 0 || counts["sender"] == 0 || counts["tables.Topics"] == 0 {
		t.Fatalf("counted %v: the walk missed the package's files", counts)
	}
	for typ, n := range counts {
		if n > maxMethods {
			t.Errorf("%s declares %d methods, more than %d: give the new ones a type of their own", typ, n, maxMethods)
		}
	}
	t.Logf("methods per type: %v", counts)
}
