package dashboard

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"
)

// A broker's status on the page.
const (
	statusUp   = "up"
	statusDown = "down"
)

// maxSeenBrokers bounds the brokers the dashboard remembers: those one sample lists (at most
// maxBrokers) and as many gone ones; past it the one gone longest is forgotten.
const maxSeenBrokers = 2 * maxBrokers

// maxAddrBytes bounds a broker address in a request: host, colon and port.
const maxAddrBytes = 255

// goneRemark is the error of a broker the name servers no longer list: it unregistered when it
// stopped, or the name servers dropped it after brokerChannelExpiredTime (120 s) of silence.
const goneRemark = "no longer registered with the name servers"

// seenBroker is what the dashboard remembers of a broker address it has seen in the cluster
// table, so that one that stops stays on the page, down, until an operator clears it.
type seenBroker struct {
	row       brokerRow // identity as last listed, without figures
	listed    bool      // in the last sample's cluster table
	lastUp    time.Time // last sample it answered; zero: never
	downSince time.Time // first sample it was down in; zero while up
}

func unixMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// reconcile (s.mu held) updates the remembered brokers from snap's table and adds to snap a
// down row for each remembered broker the table no longer lists.
func (s *sampler) reconcile(snap *snapshot) {
	listed := make(map[string]bool, len(snap.brokers))
	for _, b := range snap.brokers {
		listed[b.Addr] = true
	}
	for i := range snap.brokers {
		b := &snap.brokers[i]
		e := s.seen[b.Addr]
		if e == nil {
			s.makeRoom(listed)
			e = &seenBroker{}
			s.seen[b.Addr] = e
		}
		version := cmp.Or(b.Version, e.row.Version) // a broker down gives none: keep the last
		e.row = brokerRow{Cluster: b.Cluster, BrokerName: b.BrokerName, BrokerID: b.BrokerID, Role: b.Role,
			Addr: b.Addr, Version: version}
		e.listed = true
		if b.Status == statusUp {
			e.lastUp, e.downSince = snap.at, time.Time{}
		} else if e.downSince.IsZero() {
			e.downSince = snap.at
		}
		b.DownSince, b.LastSeen = unixMillis(e.downSince), unixMillis(e.lastUp)
	}
	for addr, e := range s.seen {
		if listed[addr] {
			continue
		}
		e.listed = false
		if e.downSince.IsZero() {
			e.downSince = snap.at
		}
		row := e.row
		row.Status, row.Registered, row.Error = statusDown, false, goneRemark
		row.DownSince, row.LastSeen = unixMillis(e.downSince), unixMillis(e.lastUp)
		snap.brokers = append(snap.brokers, row)
	}
	sortBrokers(snap.brokers)
}

func sortBrokers(rows []brokerRow) {
	slices.SortStableFunc(rows, func(a, b brokerRow) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.BrokerName, b.BrokerName),
			cmp.Compare(a.BrokerID, b.BrokerID), cmp.Compare(a.Addr, b.Addr))
	})
}

// makeRoom (s.mu held) forgets the broker gone longest when the registry is full. A sample
// lists at most maxBrokers, so a full registry always holds one that is not listed.
func (s *sampler) makeRoom(listed map[string]bool) {
	if len(s.seen) < maxSeenBrokers {
		return
	}
	oldest, at := "", time.Time{}
	for addr, e := range s.seen {
		if listed[addr] {
			continue
		}
		last := e.lastUp
		if e.downSince.After(last) {
			last = e.downSince
		}
		if oldest == "" || last.Before(at) {
			oldest, at = addr, last
		}
	}
	delete(s.seen, oldest)
}

// Errors of clear.
var (
	errNotRemembered   = errors.New("the dashboard remembers no broker at that address")
	errStillRegistered = errors.New("the broker is still registered with the name servers: only a broker they no longer list can be cleared (a stopped broker unregisters; one that died is dropped after 120 s without heartbeat)")
)

// clear forgets a down broker the name servers no longer list, or with all every one of them,
// and returns the addresses forgotten. A broker still listed cannot be cleared: the next
// sample would show it again.
func (s *sampler) clear(addr string, all bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	if all {
		for a, e := range s.seen {
			if !e.listed {
				gone = append(gone, a)
			}
		}
		slices.Sort(gone)
	} else {
		e, ok := s.seen[addr]
		switch {
		case !ok:
			return nil, errNotRemembered
		case e.listed:
			return nil, errStillRegistered
		}
		gone = []string{addr}
	}
	for _, a := range gone {
		delete(s.seen, a)
	}
	if s.last != nil && len(gone) > 0 {
		// Snapshots are shared with requests in flight: replace, never edit.
		next := *s.last
		next.brokers = slices.DeleteFunc(slices.Clone(next.brokers), func(b brokerRow) bool {
			return !b.Registered && slices.Contains(gone, b.Addr)
		})
		s.last = &next
	}
	return gone, nil
}

type clearRequest struct {
	Addr string `json:"addr"`
	All  bool   `json:"all"`
}

type clearBody struct {
	Cleared []string `json:"cleared"`
}

// clearBrokers serves POST /api/brokers/clear: {"addr": "host:port"} forgets one down broker,
// {"all": true} every down broker the name servers no longer list. A write: guardAPI checked
// the token.
func (s *Server) clearBrokers(w http.ResponseWriter, r *http.Request) {
	var req clearRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.All == (req.Addr != "") {
		writeError(w, http.StatusBadRequest, `give either "addr" (a broker's host:port) or "all": true`)
		return
	}
	if len(req.Addr) > maxAddrBytes {
		writeError(w, http.StatusBadRequest, "addr: want host:port")
		return
	}
	gone, err := s.rates.clear(req.Addr, req.All)
	switch {
	case errors.Is(err, errNotRemembered):
		writeError(w, http.StatusNotFound, err.Error()+": "+truncate(req.Addr, 64))
		return
	case err != nil:
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if gone == nil {
		gone = []string{}
	}
	s.log.Info().Strs("brokers", gone).Msg("down brokers cleared from the dashboard")
	writeJSON(w, http.StatusOK, clearBody{Cleared: gone})
}

// decodeBody reads a write's JSON body into v, at most maxWriteBody bytes and no unknown
// field, answering 400 and returning false when it cannot.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxWriteBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "request: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "request: one JSON object only")
		return false
	}
	return true
}
