// Package headergen writes the remoting.Header methods of internal/protocol from struct tags,
// so that a new header is a struct with tags and its codec runs as fast as a hand-written one:
// straight-line code over remoting.FieldReader, no reflection. The tag language is described in
// internal/protocol/doc.go; cmd/headergen runs Generate for go generate.
package headergen

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// OutputFile is the file Generate's result is written to, in the package's directory.
const OutputFile = "headers_gen.go"

// keysDirective on a defined type over a header struct (type V2 V1) makes it a header of its
// own whose keys come from the named tag of V1's fields; the options stay those of ext.
const keysDirective = "//headergen:keys "

// Header is one header type as its tags describe it.
type Header struct {
	Name   string
	Fields []Field
}

// Field is one tagged field of a header, in declaration order: the order Decode reads them,
// which decides which error a request with several bad fields gets.
type Field struct {
	Name string // Go field name
	Type string // string, int32, int64 or bool
	Key  string // extFields key
	// Required fails Decode when the key is absent or empty (Java's @CFNotNull).
	Required bool
	// OmitEmpty leaves the key out of Encode when the value is "", 0 or false.
	OmitEmpty bool
	// OmitNeg leaves an integer out of Encode when negative; Decode reads an absent or empty
	// key as -1.
	OmitNeg bool
	// NonFalse decodes a bool as true for any value but empty or "false".
	NonFalse bool
	// Alias is read by Decode when Key is absent.
	Alias string
}

// Generate parses the package in dir (its _test.go files and OutputFile left out) and returns
// the gofmt'ed source of OutputFile.
func Generate(dir string) ([]byte, error) {
	pkg, headers, err := Parse(dir)
	if err != nil {
		return nil, err
	}
	return write(pkg, headers)
}

// Parse returns the package name and the headers declared in dir, in file name and then
// declaration order.
func Parse(dir string) (string, []Header, error) {
	files, err := parseDir(dir)
	if err != nil {
		return "", nil, err
	}
	if len(files) == 0 {
		return "", nil, fmt.Errorf("headergen: no Go files in %s", dir)
	}
	decls := collectTypes(files)
	headers, err := buildHeaders(decls)
	if err != nil {
		return "", nil, err
	}
	if err := checkDistinct(headers); err != nil {
		return "", nil, err
	}
	return files[0].Name.Name, headers, nil
}

func parseDir(dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries { // os.ReadDir sorts by name
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == OutputFile {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// typeDecl is one type declaration of the package: a struct, or a defined type over another
// named type with its keys directive, if any.
type typeDecl struct {
	name    string
	strct   *ast.StructType
	base    string // type name of "type name base"
	keysTag string
}

func collectTypes(files []*ast.File) []typeDecl {
	var decls []typeDecl
	for _, f := range files {
		for _, d := range f.Decls {
			gen, ok := d.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, s := range gen.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Assign.IsValid() || ts.TypeParams != nil {
					continue // an alias shares its target's methods
				}
				td := typeDecl{name: ts.Name.Name, keysTag: keysTag(ts.Doc, gen.Doc)}
				switch t := ts.Type.(type) {
				case *ast.StructType:
					td.strct = t
				case *ast.Ident:
					td.base = t.Name
				}
				decls = append(decls, td)
			}
		}
	}
	return decls
}

func keysTag(docs ...*ast.CommentGroup) string {
	for _, doc := range docs {
		if doc == nil {
			continue
		}
		for _, c := range doc.List {
			if tag, ok := strings.CutPrefix(c.Text, keysDirective); ok {
				return strings.TrimSpace(tag)
			}
		}
	}
	return ""
}

func buildHeaders(decls []typeDecl) ([]Header, error) {
	structs := map[string]*ast.StructType{}
	for _, d := range decls {
		if d.strct != nil {
			structs[d.name] = d.strct
		}
	}
	var headers []Header
	var errs []error
	for _, d := range decls {
		h, ok, err := buildHeader(d, structs)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			headers = append(headers, h)
		}
	}
	return headers, errors.Join(errs...)
}

// buildHeader returns the header d declares, ok false when d is no header.
func buildHeader(d typeDecl, structs map[string]*ast.StructType) (Header, bool, error) {
	st, keyTag := d.strct, "ext"
	if d.base != "" && isHeader(structs[d.base]) {
		if d.keysTag == "" {
			return Header{}, false, fmt.Errorf("headergen: %s is defined over the header %s: give it its own keys with %q", d.name, d.base, keysDirective+"TAG")
		}
		st, keyTag = structs[d.base], d.keysTag
	} else if d.keysTag != "" {
		return Header{}, false, fmt.Errorf("headergen: %s has a keys directive but is not defined over a header struct", d.name)
	}
	if !isHeader(st) {
		return Header{}, false, nil
	}
	fields, err := headerFields(d.name, st, keyTag)
	return Header{Name: d.name, Fields: fields}, err == nil, err
}

// isHeader reports whether any field of st has an ext tag.
func isHeader(st *ast.StructType) bool {
	if st == nil {
		return false
	}
	for _, f := range st.Fields.List {
		if _, ok := structTag(f).Lookup("ext"); ok {
			return true
		}
	}
	return false
}

func structTag(f *ast.Field) reflect.StructTag {
	if f.Tag == nil {
		return ""
	}
	s, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	return reflect.StructTag(s)
}

func headerFields(header string, st *ast.StructType, keyTag string) ([]Field, error) {
	var fields []Field
	var errs []error
	keys := map[string]bool{}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			errs = append(errs, fmt.Errorf("headergen: %s: embedded fields are not supported", header))
			continue
		}
		for _, name := range f.Names {
			fld, err := parseField(name.Name, f, keyTag)
			if err == nil {
				err = claimKeys(keys, fld)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("headergen: %s.%s: %w", header, name.Name, err))
				continue
			}
			fields = append(fields, fld)
		}
	}
	return fields, errors.Join(errs...)
}

// claimKeys fails when a key or alias of f is already taken by another field of the header.
func claimKeys(keys map[string]bool, f Field) error {
	for _, k := range []string{f.Key, f.Alias} {
		if k == "" {
			continue
		}
		if keys[k] {
			return fmt.Errorf("key %q used twice", k)
		}
		keys[k] = true
	}
	return nil
}

func parseField(name string, f *ast.Field, keyTag string) (Field, error) {
	typ, ok := f.Type.(*ast.Ident)
	if !ok || !slices.Contains([]string{"string", "int32", "int64", "bool"}, typ.Name) {
		return Field{}, errors.New("type must be string, int32, int64 or bool")
	}
	tag := structTag(f)
	ext, ok := tag.Lookup("ext")
	if !ok {
		return Field{}, errors.New("no ext tag: every field of a header is on the wire")
	}
	opts := strings.Split(ext, ",")
	fld := Field{Name: name, Type: typ.Name, Key: opts[0]}
	if keyTag != "ext" {
		fld.Key, _ = tag.Lookup(keyTag)
	}
	if fld.Key == "" {
		return Field{}, fmt.Errorf("no key in its %s tag", keyTag)
	}
	for _, o := range opts[1:] {
		if err := fld.setOption(o); err != nil {
			return Field{}, err
		}
	}
	return fld, fld.check()
}

func (f *Field) setOption(o string) error {
	switch {
	case o == "required":
		f.Required = true
	case o == "omitempty":
		f.OmitEmpty = true
	case o == "omitneg":
		f.OmitNeg = true
	case o == "nonfalse":
		f.NonFalse = true
	case strings.HasPrefix(o, "alias="):
		f.Alias = strings.TrimPrefix(o, "alias=")
		if f.Alias == "" {
			return errors.New("empty alias")
		}
	default:
		return fmt.Errorf("unknown option %q", o)
	}
	return nil
}

// check rejects option sets that contradict themselves.
func (f *Field) check() error {
	isInt := f.Type == "int32" || f.Type == "int64"
	switch {
	case f.OmitNeg && !isInt:
		return errors.New("omitneg needs an integer")
	case f.NonFalse && f.Type != "bool":
		return errors.New("nonfalse needs a bool")
	case f.Required && (f.OmitEmpty || f.OmitNeg):
		return errors.New("a required field is always written: drop omitempty/omitneg")
	case f.OmitEmpty && f.OmitNeg:
		return errors.New("omitempty and omitneg exclude each other")
	}
	return nil
}

// checkDistinct enforces one type per codec: two headers that read and write the same keys the
// same way are one header under two names (make one an alias of the other).
func checkDistinct(headers []Header) error {
	seen := map[string]string{}
	var errs []error
	for _, h := range headers {
		sig := signature(h)
		if other, ok := seen[sig]; ok {
			errs = append(errs, fmt.Errorf("headergen: %s and %s have identical codecs: declare one as an alias of the other", other, h.Name))
			continue
		}
		seen[sig] = h.Name
	}
	return errors.Join(errs...)
}

func signature(h Header) string {
	var b strings.Builder
	for _, f := range h.Fields {
		fmt.Fprintf(&b, "%s %q %t %t %t %t %q;", f.Type, f.Key, f.Required, f.OmitEmpty, f.OmitNeg, f.NonFalse, f.Alias)
	}
	return b.String()
}

func write(pkg string, headers []Header) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by headergen from the ext tags of package %s; DO NOT EDIT.\n\n", pkg)
	fmt.Fprintf(&b, "package %s\n\nimport \"github.com/mqgo/mq/remoting\"\n", pkg)
	for _, h := range headers {
		writeEncode(&b, h)
		writeAppendBinary(&b, h)
		writeCap(&b, h)
		writeDecode(&b, h)
	}
	return format.Source(b.Bytes())
}

func writeEncode(b *bytes.Buffer, h Header) {
	fmt.Fprintf(b, "\n// Encode implements remoting.Header.\nfunc (h *%s) Encode(ext map[string]string) {\n", h.Name)
	writePuts(b, h, encodeStmt)
	b.WriteString("}\n")
}

// writePuts writes put's statement for each field, under the condition its options set.
func writePuts(b *bytes.Buffer, h Header, put func(Field) string) {
	for _, f := range h.Fields {
		switch {
		case f.OmitNeg:
			fmt.Fprintf(b, "if h.%s >= 0 {\n%s\n}\n", f.Name, put(f))
		case f.OmitEmpty:
			fmt.Fprintf(b, "if h.%s %s {\n%s\n}\n", f.Name, nonZero(f.Type), put(f))
		default:
			fmt.Fprintf(b, "%s\n", put(f))
		}
	}
}

// writeAppendBinary writes AppendBinary: the entries Encode writes, under the same conditions,
// as ROCKETMQ header bytes (remoting.BinaryHeader).
func writeAppendBinary(b *bytes.Buffer, h Header) {
	fmt.Fprintf(b, "\n// AppendBinary implements remoting.BinaryHeader.\nfunc (h *%s) AppendBinary(dst []byte) []byte {\n", h.Name)
	writePuts(b, h, appendStmt)
	b.WriteString("return dst\n}\n")
}

func appendStmt(f Field) string {
	key := strconv.Quote(f.Key)
	fn := "AppendBinaryString"
	switch f.Type {
	case "int32":
		fn = "AppendBinaryInt32"
	case "int64":
		fn = "AppendBinaryInt64"
	case "bool":
		fn = "AppendBinaryBool"
	}
	return fmt.Sprintf("dst = remoting.%s(dst, %s, h.%s)", fn, key, f.Name)
}

// writeCap writes ExtFieldsCap: every field is one key, written or omitted.
func writeCap(b *bytes.Buffer, h Header) {
	fmt.Fprintf(b, "\n// ExtFieldsCap implements remoting.SizedHeader.\nfunc (h *%s) ExtFieldsCap() int { return %d }\n", h.Name, len(h.Fields))
}

func encodeStmt(f Field) string {
	key := strconv.Quote(f.Key)
	switch f.Type {
	case "int32":
		return fmt.Sprintf("remoting.PutInt32(ext, %s, h.%s)", key, f.Name)
	case "int64":
		return fmt.Sprintf("remoting.PutInt64(ext, %s, h.%s)", key, f.Name)
	case "bool":
		return fmt.Sprintf("remoting.PutBool(ext, %s, h.%s)", key, f.Name)
	}
	return fmt.Sprintf("ext[%s] = h.%s", key, f.Name)
}

func nonZero(typ string) string {
	switch typ {
	case "string":
		return `!= ""`
	case "bool":
		return "" // the bool itself
	}
	return "!= 0"
}

func writeDecode(b *bytes.Buffer, h Header) {
	fmt.Fprintf(b, "\n// Decode implements remoting.Header.\nfunc (h *%s) Decode(ext map[string]string) error {\n", h.Name)
	var aliases []string
	for _, f := range h.Fields {
		if f.Alias != "" {
			aliases = append(aliases, strconv.Quote(f.Key), strconv.Quote(f.Alias))
		}
	}
	if len(aliases) > 0 {
		// Aliases rewrite the map, so these headers decode from a map only.
		fmt.Fprintf(b, "ext = withAliases(ext, %s)\n", strings.Join(aliases, ", "))
		b.WriteString("r := remoting.NewFieldReader(ext)\n")
		for _, f := range h.Fields {
			writeRead(b, f)
		}
		b.WriteString("return r.Err()\n}\n")
		return
	}
	b.WriteString("return h.DecodeFrom(remoting.NewFieldReader(ext))\n}\n")
	fmt.Fprintf(b, "\n// DecodeFrom is Decode reading through r (remoting.Command.FieldReader).\nfunc (h *%s) DecodeFrom(r *remoting.FieldReader) error {\n", h.Name)
	for _, f := range h.Fields {
		writeRead(b, f)
	}
	b.WriteString("return r.Err()\n}\n")
}

func writeRead(b *bytes.Buffer, f Field) {
	key := strconv.Quote(f.Key)
	switch {
	case f.OmitNeg:
		fmt.Fprintf(b, "h.%s = -1\nif r.String(%s, false) != \"\" {\nh.%s = r.%s(%s, false)\n}\n", f.Name, key, f.Name, reader(f.Type), key)
	case f.NonFalse:
		fmt.Fprintf(b, "h.%s = nonFalse(r.String(%s, %t))\n", f.Name, key, f.Required)
	default:
		fmt.Fprintf(b, "h.%s = r.%s(%s, %t)\n", f.Name, reader(f.Type), key, f.Required)
	}
}

func reader(typ string) string {
	switch typ {
	case "int32":
		return "Int32"
	case "int64":
		return "Int64"
	case "bool":
		return "Bool"
	}
	return "String"
}
