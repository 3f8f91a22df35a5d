package protocol

import "maps"

// Helpers of the generated header codecs (headers_gen.go) for options FieldReader lacks.

// nonFalse reads a bool the way the Go client reads TRACE_ON: anything but empty or "false" is
// on.
func nonFalse(v string) bool { return v != "" && v != "false" }

// withAliases returns ext with each key of the pairs (key, alias) that is absent but whose
// alias is present set to the alias's value. The caller's map is never written (an in-process
// request shares it with the sender); a copy is made only when an alias applies.
func withAliases(ext map[string]string, pairs ...string) map[string]string {
	out, copied := ext, false
	for i := 0; i+1 < len(pairs); i += 2 {
		key, alias := pairs[i], pairs[i+1]
		if _, ok := ext[key]; ok {
			continue
		}
		v, ok := ext[alias]
		if !ok {
			continue
		}
		if !copied {
			out, copied = maps.Clone(ext), true
		}
		out[key] = v
	}
	return out
}
