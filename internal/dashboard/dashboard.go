// Package dashboard serves the web dashboard of a cluster: a single page (embedded static files,
// no build step) and the JSON API under /api/ that the page polls. Everything it shows comes from
// an admin client, so it works for a whole cluster of ours or Apache RocketMQ 4.x nodes, not just
// the node that serves it.
//
// The API:
//
//	GET  /api/overview            clusters, brokers with rates, and the throughput history
//	GET  /api/topics[?system=1]   topics with queues, message totals and last put
//	GET  /api/groups              consumer groups with members and lag per queue
//	GET  /api/message?id=&topic=  a message by offset message id, else by unique key in topic
//	GET  /api/message?topic=&key= messages by key
//	GET  /api/token               {"token","header"}: what every write sends back in X-MQ-Token
//	POST /api/reset               {"group","topic","timestamp" (unix ms),"force"}: reset offsets by time
//
// Errors are 4xx/5xx with {"error": "..."}. Every /api/ request must name in its Host header
// the address it reached, a loopback name for a loopback listener, or one of
// Options.AllowedHosts; a write must also send the token, a JSON body, and no foreign Origin
// (guard.go).
package dashboard

import (
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

// Options configure Handler.
type Options struct {
	// Logger receives the dashboard's debug logs (failed admin calls); nil: silent.
	Logger *zerolog.Logger
	// Refresh is how often the page polls the API; 0: DefaultRefresh. The server samples
	// broker counters at most twice per Refresh whatever the number of open pages.
	Refresh time.Duration
	// AllowedHosts are the names the API answers under besides the address a request reached
	// (and, on loopback, localhost): "name" with any port, "name:port" with that one. Give
	// the names a browser uses for the node, such as a reverse proxy's.
	AllowedHosts []string
}

// Handler serves the dashboard at / and its API at /api/, reading the cluster through a. The
// caller keeps a and closes it; the handler starts no goroutine.
func Handler(a *admin.Admin, opts Options) http.Handler {
	return newServer(a, opts)
}

type server struct {
	src     source
	log     zerolog.Logger
	refresh time.Duration
	rates   *sampler
	mux     *http.ServeMux
	allowed []hostRule
	token   string // what writes send in TokenHeader

	marksMu sync.Mutex
	marks   map[string]consumeMark // by group
}

func newServer(src source, opts Options) *server {
	s := &server{src: src, refresh: opts.Refresh, log: zerolog.Nop(), marks: map[string]consumeMark{},
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
	s.mux.HandleFunc("GET /api/topics", s.topics)
	s.mux.HandleFunc("GET /api/groups", s.groups)
	s.mux.HandleFunc("GET /api/message", s.message)
	s.mux.HandleFunc("GET /api/token", s.tokenAnswer)
	s.mux.HandleFunc("POST /api/reset", s.reset)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API: "+r.Method+" "+truncate(r.URL.Path, 64))
	})
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
