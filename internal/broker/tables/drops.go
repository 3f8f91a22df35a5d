package tables

import (
	"slices"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// maxLoggedNames bounds how many dropped names one log line quotes.
const maxLoggedNames = 8

// nameDrops is what a table lost for invalid names, for one log line: a count, and the
// first maxLoggedNames keys quoted by internal/names (escaped, each at most 64 bytes).
type nameDrops struct {
	count  int
	quoted []string
}

func (d *nameDrops) add(key string) {
	d.count++
	if len(d.quoted) < maxLoggedNames {
		d.quoted = append(d.quoted, names.Quote(key, len(key)))
	}
}

// log writes e with the count and the quoted names (sorted, so one table logs alike each time).
func (d *nameDrops) log(e *zerolog.Event, msg string) {
	slices.Sort(d.quoted)
	e.Int("dropped", d.count).Strs("names", d.quoted).Msg(msg)
}

// dropInvalidTopics deletes from a topics table (topics.json, or a master's) every entry whose
// key is not a valid topic name or whose topicName is not its key; an empty topicName takes
// the key. The broker would otherwise register and serve a name no request may carry.
func dropInvalidTopics(table map[string]route.TopicConfig) nameDrops {
	return dropInvalidNames(table, func(c *route.TopicConfig) *string { return &c.TopicName }, names.ValidTopic)
}

// dropInvalidGroups is dropInvalidTopics for a subscription group table (groupName and group
// names).
func dropInvalidGroups(table map[string]SubscriptionGroupConfig) nameDrops {
	return dropInvalidNames(table, func(c *SubscriptionGroupConfig) *string { return &c.GroupName }, names.ValidGroup)
}

// dropInvalidNames deletes every entry whose key fails valid or whose own name (name(entry),
// filled in from the key when empty) is not its key.
func dropInvalidNames[C any](table map[string]C, name func(*C) *string, valid func(string) bool) nameDrops {
	var d nameDrops
	for key, c := range table {
		if n := name(&c); *n == "" {
			*n = key
			table[key] = c
		}
		if *name(&c) != key || !valid(key) {
			delete(table, key)
			d.add(key)
		}
	}
	return d
}
