package route

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Java properties text, the body of RocketMQ's GET_/UPDATE_BROKER_CONFIG and
// GET_/UPDATE_NAMESRV_CONFIG (MixAll.properties2String and string2Properties).

// maxProperties bounds the keys ParseProperties takes: RocketMQ's whole broker configuration
// has about 250.
const maxProperties = 1024

// FormatProperties renders kv as "key=value" lines, keys sorted, as RocketMQ's
// getAllConfigsFormatString does (it writes no escapes either).
func FormatProperties(kv map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(kv[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseProperties reads properties text as java.util.Properties reads the lines RocketMQ's
// tools write: "key=value" or "key:value" or "key value", blank lines and lines starting with
// # or ! skipped, surrounding spaces trimmed. A line with no key is an error, as are more than
// maxProperties keys.
func ParseProperties(s string) (map[string]string, error) {
	kv := map[string]string{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		cut := strings.IndexAny(line, "=: \t")
		key, val := line, ""
		if cut >= 0 {
			key, val = line[:cut], strings.TrimLeft(line[cut:], " \t")
			if val != "" && (val[0] == '=' || val[0] == ':') {
				val = val[1:]
			}
			val = strings.TrimSpace(val)
		}
		if key == "" {
			return nil, fmt.Errorf("line %d has no key", i+1)
		}
		kv[key] = val
		if len(kv) > maxProperties {
			return nil, errors.New("more than 1024 keys")
		}
	}
	return kv, nil
}

// listSome joins up to ten items for a remark and counts the rest, so a body of a thousand keys
// does not make a remark of a thousand names.
func listSome(items []string) string {
	const most = 10
	if len(items) <= most {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:most], ", ") + fmt.Sprintf(" and %d more", len(items)-most)
}

// ListSome is listSome for the broker's UPDATE_BROKER_CONFIG.
func ListSome(items []string) string { return listSome(items) }
