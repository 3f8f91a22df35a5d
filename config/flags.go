package config

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// BindFlags registers on fs a flag for every field of o, groups included, whose flag tag names
// one (fields tagged flag:"-" are for code: TLS configurations, ACL accounts, the optional
// parts, the logger). Parsing writes o's fields; a flag not given leaves its field as it was,
// so the node applies its default, which the help shows. The usage names the RocketMQ setting
// the field mirrors and the environment variable read when the flag is not given.
//
// Call the returned function after fs.Parse: it fills each field whose flag was not given
// from its environment variable, if set (secrets go there: a flag's value is visible to
// every local user in the process list).
func BindFlags(fs *flag.FlagSet, o *Options) (applyEnv func() error) {
	defaults := Options{}
	defaults.EnsureDefaults()
	type envFlag struct{ flag, env string }
	var envs []envFlag
	var walk func(v, def reflect.Value)
	walk = func(v, def reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, tagged := f.Tag.Lookup("flag")
			if name == "-" {
				continue
			}
			if !tagged {
				if f.Type.Kind() == reflect.Struct {
					walk(v.Field(i), def.Field(i))
					continue
				}
				panic(fmt.Sprintf("config: field %s has no flag tag", f.Name))
			}
			fv := &fieldValue{v: v.Field(i), sep: f.Tag.Get("sep")}
			usage := f.Tag.Get("usage")
			if s := f.Tag.Get("rocketmq"); s != "" {
				usage += " (RocketMQ " + s + ")"
			}
			if e := f.Tag.Get("env"); e != "" {
				usage += " (default: $" + e + ", which ps does not show)"
				envs = append(envs, envFlag{name, e})
			}
			fs.Var(fv, name, quoteArg(usage))
			if d := (&fieldValue{v: def.Field(i), sep: fv.sep}).String(); !strings.Contains(usage, "(default") &&
				d != "false" && d != "0" {
				fs.Lookup(name).DefValue = d
			}
		}
	}
	walk(reflect.ValueOf(o).Elem(), reflect.ValueOf(&defaults).Elem())
	return func() error {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, e := range envs {
			if s := os.Getenv(e.env); s != "" && !given[e.flag] {
				if err := fs.Set(e.flag, s); err != nil {
					return fmt.Errorf("$%s: %w", e.env, err)
				}
			}
		}
		return nil
	}
}

// argWord is the first word of a usage in capitals, which the flag package shows as the
// flag's argument when it is back-quoted.
var argWord = regexp.MustCompile(`\b([A-Z]+(?:\[?[:;,=][A-Z]+\]?)+|DIR|SECRET|IP|ID)(?:[\s),]|$)`)

func quoteArg(usage string) string {
	if loc := argWord.FindStringSubmatchIndex(usage); loc != nil {
		return usage[:loc[2]] + "`" + usage[loc[2]:loc[3]] + "`" + usage[loc[3]:]
	}
	return usage
}

// fieldValue is a flag.Value writing one field of Options.
type fieldValue struct {
	v   reflect.Value // settable; invalid in the zero value the flag package makes
	sep string
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	flushType    = reflect.TypeFor[storage.FlushDiskType]()
	roleType     = reflect.TypeFor[storage.BrokerRole]()
	tlsModeType  = reflect.TypeFor[remoting.TLSMode]()
)

func (f *fieldValue) IsBoolFlag() bool { return f.v.IsValid() && f.v.Kind() == reflect.Bool }

func (f *fieldValue) String() string {
	if !f.v.IsValid() {
		return ""
	}
	switch v := f.v.Interface().(type) {
	case time.Duration:
		if v == 0 {
			return ""
		}
		return v.String()
	case []string:
		return strings.Join(v, f.sep)
	case []time.Duration:
		s := make([]string, len(v))
		for i, d := range v {
			s[i] = d.String()
		}
		return strings.Join(s, f.sep)
	case map[string]string:
		s := make([]string, 0, len(v))
		for k, a := range v {
			s = append(s, k+"="+a)
		}
		return strings.Join(s, f.sep)
	}
	if f.v.IsZero() && f.v.Kind() != reflect.Bool {
		return ""
	}
	return fmt.Sprint(f.v.Interface())
}

// Set parses s as the field's type: numbers and durations as Go writes them, lists split at
// the field's separator, a map as ID=VALUE items, and the enumerations by RocketMQ's names or
// the short ones mqnode has always taken (sync, async-master, ...).
func (f *fieldValue) Set(s string) error {
	v := f.v
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
	case v.Type() == flushType:
		t := storage.FlushDiskType(strings.ToUpper(s))
		if !strings.HasSuffix(string(t), "_FLUSH") {
			t += "_FLUSH"
		}
		if t.Check() != nil {
			return fmt.Errorf("%q is not async or sync", s)
		}
		v.SetString(string(t))
	case v.Type() == roleType:
		r := storage.BrokerRole(strings.ReplaceAll(strings.ToUpper(s), "-", "_"))
		if r != storage.AsyncMaster && r != storage.SyncMaster && r != storage.Slave {
			return fmt.Errorf("%q is not async-master, sync-master or slave", s)
		}
		v.SetString(string(r))
	case v.Type() == tlsModeType:
		m, err := remoting.ParseTLSMode(s)
		if err != nil {
			return err
		}
		v.SetString(string(m))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int32 || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case v.Kind() == reflect.Slice && v.Type().Elem() == durationType:
		var ds []time.Duration
		for _, w := range f.split(s) {
			d, err := time.ParseDuration(w)
			if err != nil {
				return err
			}
			ds = append(ds, d)
		}
		v.Set(reflect.ValueOf(ds))
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		v.Set(reflect.ValueOf(f.split(s)))
	case v.Kind() == reflect.Map:
		m := map[string]string{}
		for _, item := range f.split(s) {
			k, a, ok := strings.Cut(item, "=")
			if !ok || k == "" || a == "" {
				return fmt.Errorf("%q is not ID=HOST:PORT", item)
			}
			m[k] = a
		}
		v.Set(reflect.ValueOf(m))
	default:
		return fmt.Errorf("config: no flag parser for %v", v.Type())
	}
	return nil
}

// split cuts s at the separator, dropping empty items and the spaces around each.
func (f *fieldValue) split(s string) []string {
	var out []string
	for _, w := range strings.Split(s, f.sep) {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}
