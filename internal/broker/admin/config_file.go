package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/mqgo/mq/route"
)

// The settings UPDATE_BROKER_CONFIG changes at run time (brokerPermission alone) outlive a
// restart: RocketMQ writes the change into the broker's configuration file; the node has none,
// so they go to <store>/config/broker.properties, which New reads back over the node's options.

// BrokerConfigFile is the file, under the store's config directory, that keeps the settings
// UPDATE_BROKER_CONFIG changed.
const BrokerConfigFile = "broker.properties"

// KeyBrokerPermission is brokerPermission's key in properties text.
const KeyBrokerPermission = "brokerPermission"

// runtimeConfig reads the settings UPDATE_BROKER_CONFIG persisted (none when the file is
// absent).
func (s *Service) runtimeConfig() (map[string]string, error) {
	data, err := os.ReadFile(s.core.Store().ConfigPath(BrokerConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return route.ParseProperties(string(data))
}

// loadRuntimeConfig gives the core the persisted settings at start, before its first
// registration carries them.
func (s *Service) loadRuntimeConfig() error {
	kv, err := s.runtimeConfig()
	if err != nil {
		return fmt.Errorf("broker: read %s: %w", BrokerConfigFile, err)
	}
	v, ok := kv[KeyBrokerPermission]
	if !ok {
		return nil
	}
	p, err := strconv.ParseInt(v, 10, 32)
	if err == nil {
		err = s.core.SetPermission(int32(p))
	}
	if err != nil {
		return fmt.Errorf("broker: %s: %s=%q: %v", BrokerConfigFile, KeyBrokerPermission, v, err)
	}
	s.log.Info().Int64("perm", p).Msg("broker permission from " + BrokerConfigFile)
	return nil
}

// persistConfig merges kv into the persisted settings and writes the file whole (a temporary
// file renamed over it), as RocketMQ's Configuration.persist rewrites its file.
func (s *Service) persistConfig(kv map[string]string) error {
	s.configMu.Lock()
	defer s.configMu.Unlock()
	all, err := s.runtimeConfig()
	if err != nil {
		return err
	}
	for k, v := range kv {
		all[k] = v
	}
	path := s.core.Store().ConfigPath(BrokerConfigFile)
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
