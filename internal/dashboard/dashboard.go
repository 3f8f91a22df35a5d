// Package dashboard serves the web dashboard of a cluster: a single page (embedded static files,
// no build step) and the JSON API under /api/ that the page polls. Everything it shows comes from
// an admin client, so it works for a whole cluster of ours or Apache RocketMQ 4.x nodes, not just
// the node that serves it.
//
// The API:
//
//	GET  /api/overview            clusters, brokers (up, or down until cleared) with rates, and
//	                              the throughput history
//	GET  /api/ha                  each broker group: master and slaves, CommitLog max offsets, each
//	                              slave's lag behind its master; in controller mode the master
//	                              epoch and SyncStateSet
//	GET  /api/topics[?system=1]   topics with queues, message totals and last put
//	GET  /api/groups              consumer groups with members and lag per queue
//	GET  /api/producers?group=&topic=  a producer group's connections (on the topic's brokers)
//	GET  /api/message?id=&topic=  a message by offset message id, else by unique key in topic
//	GET  /api/message?topic=&key= messages by key
//	GET  /api/browse?topic=&begin=&end=&max=  messages of a topic stored from begin (unix ms)
//	GET  /api/dlq                 consumer groups with a dead-letter topic and its size
//	GET  /api/dlq?group=&begin=&end=&max=     the messages of %DLQ%<group>
//	GET  /api/trace?id=[&topic=]  the trace records of a message id (RMQ_SYS_TRACE_TOPIC)
//	GET  /api/token               {"token","header"}: what every write sends back in X-MQ-Token
//	POST /api/reset               {"group","topic","timestamp" (unix ms),"force"}: reset offsets by time
//	POST /api/brokers/clear       {"addr"} or {"all": true}: forget brokers shown down
//	POST /api/dlq/resend          {"group","msgId"[,"clientId"]}: a dead letter consumed again
//	                              by a consumer of its group (CONSUME_MESSAGE_DIRECTLY)
//
// Errors are 4xx/5xx with {"error": "..."}. Every /api/ request must name in its Host header
// the address it reached, a loopback name for a loopback listener, or one of
// Options.AllowedHosts; a write must also send the token, a JSON body, and no foreign Origin
// (guard.go).
package dashboard

import (
	"context"
	"embed"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/rs/zerolog"
)

// DefaultRefresh is how often the page polls, the RocketMQ dashboard's own refresh period.
const DefaultRefresh = 2 * time.Second

// historyWindow is how far back the throughput chart reaches.
const historyWindow = 5 * time.Minute

// maxHistorySamples bounds the ring however short Refresh is.
const maxHistorySamples = 1000

//go:embed static
var staticFiles embed.FS

// Options configure New.
type Options struct {
	// Logger receives the dashboard's debug logs (failed admin calls); nil: silent.
	Logger *zerolog.Logger
	// Refresh is how often the page polls the API and the server samples the cluster; 0:
	// DefaultRefresh. Pages polling add samples, at most two per Refresh whatever their number.
	Refresh time.Duration
	// AllowedHosts are the names the API answers under besides the address a request reached
	// (and, on loopback, localhost): "name" with any port, "name:port" with that one. Give
	// the names a browser uses for the node, such as a reverse proxy's.
	AllowedHosts []string
}

// Server serves the dashboard at / and its API at /api/. It samples the cluster every Refresh
// in a goroutine of its own, so that the chart's history and the brokers that went down are
// there when a page opens; Close stops it.
type Server struct {
	src     source
	log     zerolog.Logger
	refresh time.Duration
	rates   *sampler
	mux     *http.ServeMux
	allowed []hostRule
	token   string // what writes send in TokenHeader

	marksMu sync.Mutex
	marks   map[string]consumeMark // by group

	stop    context.CancelFunc // nil until start
	stopped sync.WaitGroup
	closed  sync.Once
}

// New returns the dashboard of the cluster a reads, sampling it until Close. The caller keeps
// a and closes it after Close.
func New(a *admin.Admin, opts Options) *Server {
	s := newServer(a, opts)
	s.start()
	return s
}

// start begins the sampling loop.
func (s *Server) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.stopped.Go(func() { s.rates.run(ctx, s.refresh, s.log) })
}

// Close stops the sampling loop and waits for it; the handler still answers, sampling on
// demand. Safe to call more than once.
func (s *Server) Close() error {
	s.closed.Do(func() {
		if s.stop != nil {
			s.stop()
		}
		s.stopped.Wait()
	})
	return nil
}

func newServer(src source, opts Options) *Server {
	s := &Server{src: src, refresh: opts.Refresh, log: zerolog.Nop(), marks: map[string]consumeMark{},
		allowed: parseHostRules(opts.AllowedHosts), token: newToken()}
	if opts.Logger != nil {
		s.log = *opts.Logger
	}
	s.log = s.log.With().Str("component", "dashboard").Logger()
	if s.refresh <= 0 {
		s.refresh = DefaultRefresh
	}
	s.rates = newSampler(src, s.refresh/2, historyWindow)
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	s.mux = http.NewServeMux()
	files := http.FileServerFS(static)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})
	s.mux.HandleFunc("GET /api/overview", s.overview)
	s.mux.HandleFunc("GET /api/ha", s.ha)
	s.mux.HandleFunc("GET /api/topics", s.topics)
	s.mux.HandleFunc("GET /api/groups", s.groups)
	s.mux.HandleFunc("GET /api/producers", s.producers)
	s.mux.HandleFunc("GET /api/message", s.message)
	s.mux.HandleFunc("GET /api/browse", s.browse)
	s.mux.HandleFunc("GET /api/dlq", s.dlq)
	s.mux.HandleFunc("GET /api/trace", s.trace)
	s.mux.HandleFunc("GET /api/token", s.tokenAnswer)
	s.mux.HandleFunc("POST /api/reset", s.reset)
	s.mux.HandleFunc("POST /api/brokers/clear", s.clearBrokers)
	s.mux.HandleFunc("POST /api/dlq/resend", s.resend)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API: "+r.Method+" "+truncate(r.URL.Path, 64))
	})
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The page is a tool for operators: never framed by another site, no inline scripts.
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/api/") && s.guardAPI(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}
