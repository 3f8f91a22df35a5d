package acl

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// DefaultWatchInterval is how often Watch reads the file, RocketMQ's FileWatchService period.
const DefaultWatchInterval = 500 * time.Millisecond

// Watch keeps g in step with the plain_acl.yml at path, read by parse, until ctx ends. It loads the file at
// once and stores its Checker in g (so that an edit made after the caller's own load is not
// missed), then reads it every interval (DefaultWatchInterval if not positive) and stores a new
// Checker when the content differs from the last read: a hash, as RocketMQ's FileWatchService,
// so an edit within the file system's mtime resolution still counts. A file that is missing,
// does not parse or does not validate leaves g's Checker in effect; the error is logged once
// per content, never with a secret in it. Replace the file by renaming a complete one over it:
// a reader can catch an in-place rewrite half done, and half a file may be valid.
//
// It returns nil when ctx ends, an error only for arguments it cannot work with.
func Watch(ctx context.Context, path string, parse func([]byte) (*Config, error), interval time.Duration, g *Guard,
	log zerolog.Logger) error {
	if g == nil {
		return errors.New("acl: Watch without a Guard")
	}
	if parse == nil {
		return errors.New("acl: Watch without a parser")
	}
	if path == "" {
		return errors.New("acl: Watch without a file")
	}
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	w := newWatcher(path, parse, g, log)
	w.poll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			w.poll()
		}
	}
}

// watcher is Watch's state between polls.
type watcher struct {
	path  string
	parse func([]byte) (*Config, error)
	g     *Guard
	log   zerolog.Logger
	// seen is the hash of the last content read, or of the last read error, so that an
	// unchanged file is neither reloaded nor complained about again.
	seen   [sha256.Size]byte
	polled bool
}

func newWatcher(path string, parse func([]byte) (*Config, error), g *Guard, log zerolog.Logger) *watcher {
	return &watcher{path: path, parse: parse, g: g, log: log.With().Str("component", "acl").Str("file", path).Logger()}
}

// poll reads the file once and acts on what changed since the last poll.
func (w *watcher) poll() {
	data, readErr := os.ReadFile(w.path)
	var sum [sha256.Size]byte
	if readErr != nil {
		sum = sha256.Sum256([]byte("read error: " + readErr.Error()))
	} else {
		sum = sha256.Sum256(data)
	}
	if w.polled && sum == w.seen {
		return
	}
	w.polled, w.seen = true, sum
	if readErr != nil {
		w.log.Error().Err(readErr).Msg("cannot read the ACL file; the rules in effect stay")
		return
	}
	cfg, err := w.parse(data)
	if err == nil {
		var c *Checker
		if c, err = New(cfg); err == nil {
			w.g.Store(c)
			w.log.Info().Int("accounts", len(cfg.Accounts)).
				Int("global_white_addresses", len(cfg.GlobalWhiteRemoteAddresses)).Msg("ACL loaded")
			return
		}
	}
	w.log.Error().Err(err).Msg("ACL file rejected; the rules in effect stay")
}
