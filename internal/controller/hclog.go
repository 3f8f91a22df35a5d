package controller

import (
	"encoding/json"
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// newRaftLogger makes the hclog.Logger raft wants, writing to our zerolog logger: hclog writes
// one JSON object a line, and hclogWriter turns each into a zerolog event at the same level. Raft
// logs at hclog's level only what our logger would keep, so a disabled logger costs nothing.
func newRaftLogger(log zerolog.Logger) hclog.Logger {
	level := hclog.Off
	switch l := log.GetLevel(); {
	case l == zerolog.Disabled:
	case l <= zerolog.TraceLevel:
		level = hclog.Trace
	case l <= zerolog.DebugLevel:
		level = hclog.Debug
	case l <= zerolog.InfoLevel:
		level = hclog.Info
	case l <= zerolog.WarnLevel:
		level = hclog.Warn
	case l <= zerolog.ErrorLevel:
		level = hclog.Error
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "raft",
		Level:      level,
		Output:     hclogWriter{log: log},
		JSONFormat: true,
	})
}

// hclogWriter receives hclog's JSON lines.
type hclogWriter struct{ log zerolog.Logger }

var _ io.Writer = hclogWriter{}

func (w hclogWriter) Write(p []byte) (int, error) {
	var entry map[string]any
	if err := json.Unmarshal(p, &entry); err != nil {
		w.log.Info().Str("module", "raft").Msg(string(p))
		return len(p), nil
	}
	var ev *zerolog.Event
	switch entry["@level"] {
	case "trace":
		ev = w.log.Trace()
	case "debug":
		ev = w.log.Debug()
	case "warn":
		ev = w.log.Warn()
	case "error":
		ev = w.log.Error()
	default:
		ev = w.log.Info()
	}
	msg, _ := entry["@message"].(string)
	module, _ := entry["@module"].(string)
	for _, k := range []string{"@level", "@message", "@module", "@timestamp"} {
		delete(entry, k)
	}
	ev.Str("module", module).Fields(entry).Msg(msg)
	return len(p), nil
}
