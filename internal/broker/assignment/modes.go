package assignment

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// modesFile is RocketMQ's file of the mode table (BrokerPathConfigHelper
// .getMessageRequestModePath), in the store's config directory.
const modesFile = "messageRequestMode.json"

// maxRequestModes bounds the mode table (ours; RocketMQ has no bound): a mode names an
// existing topic and group, but groups are auto-created, so a client could otherwise grow the
// file without end. A deployment sets a mode for a few groups.
const maxRequestModes = 1 << 16

// modes is the mode table (MessageRequestModeManager): topic -> group -> mode.
type modes struct {
	path string
	log  zerolog.Logger

	mu    sync.Mutex
	table map[string]map[string]protocol.SetMessageRequestModeRequestBody
	n     int
	// writeMu orders the writes of the file, so the last one holds the latest table.
	writeMu sync.Mutex
}

// loadModes reads the mode table; entries no request could have set (bad names, unknown
// modes) are left out with a warning, and at most maxRequestModes are kept.
func loadModes(path string, log zerolog.Logger) (*modes, error) {
	m := &modes{path: path, log: log, table: map[string]map[string]protocol.SetMessageRequestModeRequestBody{}}
	var w protocol.MessageRequestModeSerializeWrapper
	fromBak, err := storage.ReadJSONFile(path, &w)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return m, nil
	case err != nil:
		return nil, fmt.Errorf("assignment: load %s: %w", modesFile, err)
	case fromBak:
		log.Warn().Str("file", path).Msg("message request modes loaded from backup")
	}
	dropped := 0
	for topic, groups := range w.MessageRequestModeMap {
		for group, b := range groups {
			b.Topic, b.ConsumerGroup = topic, group
			if !validMode(b) || m.n >= maxRequestModes {
				dropped++
				continue
			}
			m.putLocked(b)
		}
	}
	if dropped > 0 {
		log.Warn().Str("file", path).Int("dropped", dropped).
			Msg("message request modes with invalid names or modes, or beyond the table's bound, left out")
	}
	return m, nil
}

// validMode reports whether a SET_MESSAGE_REQUEST_MODE could have stored b.
func validMode(b protocol.SetMessageRequestModeRequestBody) bool {
	return names.ValidTopic(b.Topic) && !names.IsRetryTopic(b.Topic) && names.ValidGroup(b.ConsumerGroup) &&
		(b.Mode == config.MessageRequestModePull || b.Mode == config.MessageRequestModePop)
}

func (m *modes) putLocked(b protocol.SetMessageRequestModeRequestBody) {
	g := m.table[b.Topic]
	if g == nil {
		g = map[string]protocol.SetMessageRequestModeRequestBody{}
		m.table[b.Topic] = g
	}
	if _, ok := g[b.ConsumerGroup]; !ok {
		m.n++
	}
	g[b.ConsumerGroup] = b
}

// get returns the mode set for a group and topic.
func (m *modes) get(topic, group string) (protocol.SetMessageRequestModeRequestBody, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.table[topic][group]
	return b, ok
}

// set stores a mode and writes the table before returning; a new entry beyond
// maxRequestModes is refused.
func (m *modes) set(b protocol.SetMessageRequestModeRequestBody) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	if _, ok := m.table[b.Topic][b.ConsumerGroup]; !ok && m.n >= maxRequestModes {
		m.mu.Unlock()
		return fmt.Errorf("the broker holds %d message request modes, its most; set none for a new group and topic", maxRequestModes)
	}
	m.putLocked(b)
	w := m.snapshotLocked()
	m.mu.Unlock()
	if err := storage.WriteJSONFile(m.path, w); err != nil {
		m.log.Error().Err(err).Str("file", m.path).Msg("write message request modes")
		return fmt.Errorf("mode set but not written: %v", err)
	}
	return nil
}

// snapshot copies the table in its wire and file form.
func (m *modes) snapshot() protocol.MessageRequestModeSerializeWrapper {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshotLocked()
}

func (m *modes) snapshotLocked() protocol.MessageRequestModeSerializeWrapper {
	w := protocol.MessageRequestModeSerializeWrapper{
		MessageRequestModeMap: make(map[string]map[string]protocol.SetMessageRequestModeRequestBody, len(m.table))}
	for topic, groups := range m.table {
		c := make(map[string]protocol.SetMessageRequestModeRequestBody, len(groups))
		for g, b := range groups {
			c[g] = b
		}
		w.MessageRequestModeMap[topic] = c
	}
	return w
}

// installMaster replaces the table with a master's (a slave's sync), entries no request could
// have set left out, and writes the file when the table changed. It reports how many entries
// it left out.
func (m *modes) installMaster(w protocol.MessageRequestModeSerializeWrapper) (dropped int, err error) {
	table := map[string]map[string]protocol.SetMessageRequestModeRequestBody{}
	n := 0
	for topic, groups := range w.MessageRequestModeMap {
		for group, b := range groups {
			b.Topic, b.ConsumerGroup = topic, group
			if !validMode(b) || n >= maxRequestModes {
				dropped++
				continue
			}
			if table[topic] == nil {
				table[topic] = map[string]protocol.SetMessageRequestModeRequestBody{}
			}
			table[topic][group] = b
			n++
		}
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.Lock()
	same := sameModes(m.table, table)
	if !same {
		m.table, m.n = table, n
	}
	snap := m.snapshotLocked()
	m.mu.Unlock()
	if same {
		return dropped, nil
	}
	if err := storage.WriteJSONFile(m.path, snap); err != nil {
		return dropped, fmt.Errorf("assignment: write %s: %w", modesFile, err)
	}
	return dropped, nil
}

func sameModes(a, b map[string]map[string]protocol.SetMessageRequestModeRequestBody) bool {
	if len(a) != len(b) {
		return false
	}
	for topic, ga := range a {
		gb, ok := b[topic]
		if !ok || !maps.Equal(ga, gb) {
			return false
		}
	}
	return true
}
