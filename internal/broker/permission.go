package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/mqgo/mq/route"
)

// The broker's permission (RocketMQ's brokerPermission), the one setting UPDATE_BROKER_CONFIG
// changes at run time: a broker that is not both readable and writable registers every topic
// with that permission instead of its own, so producers (not writable) or consumers (not
// readable) leave it at their next route refresh. RocketMQ writes the change into the broker's
// configuration file; the node has none, so the settings changed at run time go to
// <store>/config/broker.properties, read back at start over the node's options.

// BrokerConfigFile is the file, under the store's config directory, that keeps the settings
// UPDATE_BROKER_CONFIG changed.
const BrokerConfigFile = "broker.properties"

// KeyBrokerPermission is brokerPermission's key in properties text.
const KeyBrokerPermission = "brokerPermission"

// Permission is the broker's permission (route.PermReadWrite unless changed).
func (b *Broker) Permission() int32 { return b.perm.Load() }

// CheckPermission reports whether p is a permission a broker may take: read, write or both
// (RocketMQ takes any integer; a broker with the inherit or priority bit would hand them to
// every topic).
func CheckPermission(p int32) error {
	if p&^route.PermReadWrite != 0 {
		return fmt.Errorf("brokerPermission %d is not 0, 2 (write), 4 (read) or 6 (read and write)", p)
	}
	return nil
}

// SetPermission changes the broker's permission, persists it and returns once a registration
// round has carried it to the name servers (or the round's wait ran out). The topics'
// registered form changes, so every topic is registered again under a new data version.
func (b *Broker) SetPermission(p int32) error {
	if err := CheckPermission(p); err != nil {
		return err
	}
	if err := b.persistConfig(map[string]string{KeyBrokerPermission: strconv.Itoa(int(p))}); err != nil {
		return fmt.Errorf("persist %s: %w", BrokerConfigFile, err)
	}
	old := b.perm.Swap(p)
	if old != p {
		b.log.Info().Int32("from", old).Int32("to", p).Msg("broker permission changed")
		b.topics.PendAll()
		b.registrar.RegisterChanged()
	}
	return nil
}

// withPermission is a registration's topic table as RocketMQ's registerBrokerAll sends it: when
// the broker is not both readable and writable, every topic carries the broker's permission.
func (b *Broker) withPermission(w route.TopicConfigSerializeWrapper) route.TopicConfigSerializeWrapper {
	p := b.perm.Load()
	if route.IsReadable(p) && route.IsWritable(p) {
		return w
	}
	for name, tc := range w.TopicConfigTable {
		tc.Perm = p
		w.TopicConfigTable[name] = tc
	}
	return w
}

// RuntimeConfig reads the settings UPDATE_BROKER_CONFIG persisted (none when the file is
// absent).
func (b *Broker) RuntimeConfig() (map[string]string, error) {
	data, err := os.ReadFile(b.configPath(BrokerConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return route.ParseProperties(string(data))
}

// loadRuntimeConfig applies the persisted settings at start.
func (b *Broker) loadRuntimeConfig() error {
	b.perm.Store(route.PermReadWrite)
	kv, err := b.RuntimeConfig()
	if err != nil {
		return fmt.Errorf("broker: read %s: %w", BrokerConfigFile, err)
	}
	if s, ok := kv[KeyBrokerPermission]; ok {
		p, err := strconv.ParseInt(s, 10, 32)
		if err == nil {
			err = CheckPermission(int32(p))
		}
		if err != nil {
			return fmt.Errorf("broker: %s: %s=%q: %v", BrokerConfigFile, KeyBrokerPermission, s, err)
		}
		b.perm.Store(int32(p))
		b.log.Info().Int32("perm", int32(p)).Msg("broker permission from " + BrokerConfigFile)
	}
	return nil
}

// persistConfig merges kv into the persisted settings and writes the file whole (a temporary
// file renamed over it), as RocketMQ's Configuration.persist rewrites its file.
func (b *Broker) persistConfig(kv map[string]string) error {
	b.configMu.Lock()
	defer b.configMu.Unlock()
	all, err := b.RuntimeConfig()
	if err != nil {
		return err
	}
	for k, v := range kv {
		all[k] = v
	}
	path := b.configPath(BrokerConfigFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(route.FormatProperties(all))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
