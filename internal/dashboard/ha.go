package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// maxControllersAsked bounds the name servers asked whether they run the controller leader.
const maxControllersAsked = 8

// haMember is one broker of a group in the HA view.
type haMember struct {
	BrokerID int64  `json:"brokerId"`
	Role     string `json:"role"`
	Addr     string `json:"addr"`
	Status   string `json:"status"`
	// MaxOffset is the broker's CommitLog max offset (runtime info commitLogMaxOffset): on a
	// slave, how far it has replicated.
	MaxOffset *int64 `json:"maxOffset"`
	// LagBytes is the master's MaxOffset less this slave's, from the same sample; null on the
	// master and when either is unknown.
	LagBytes *int64 `json:"lagBytes"`
	// InSync and Alive are the controller's view in controller mode (in the SyncStateSet,
	// heartbeating); null otherwise.
	InSync *bool  `json:"inSync"`
	Alive  *bool  `json:"alive"`
	Error  string `json:"error,omitempty"`
}

// haController is a group's replica state as the controller leader keeps it.
type haController struct {
	MasterBrokerID    int64   `json:"masterBrokerId"`
	MasterAddr        string  `json:"masterAddr"`
	MasterEpoch       int32   `json:"masterEpoch"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
	SyncStateSet      []int64 `json:"syncStateSet"`
}

type haGroup struct {
	Cluster    string        `json:"cluster"`
	BrokerName string        `json:"brokerName"`
	Members    []haMember    `json:"members"`
	Controller *haController `json:"controller"` // null: not in controller mode
	// MaxLagBytes is the largest LagBytes of the group's slaves; null when none is known.
	MaxLagBytes *int64 `json:"maxLagBytes"`
}

type haBody struct {
	Groups []haGroup `json:"groups"`
	// Controller is the address of the controller leader that answered, "" when none did
	// (no controller mode, or no name server runs the leader: ControllerError says why).
	Controller      string `json:"controller"`
	ControllerError string `json:"controllerError,omitempty"`
	SampledAt       int64  `json:"sampledAt"`
}

// ha serves GET /api/ha: the broker groups of the last sample with each slave's lag behind its
// master (the difference of their CommitLog max offsets, as RocketMQ's HA compares them), and
// in controller mode what the controller leader says of each group.
func (s *Server) ha(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	snap, _, err := s.rates.current(ctx)
	if err != nil {
		s.upstream(w, r, fmt.Errorf("cluster info: %w", err))
		return
	}
	body := haBody{Groups: haGroups(snap.brokers), SampledAt: snap.at.UnixMilli()}
	if len(body.Groups) > 0 {
		names := make([]string, 0, len(body.Groups))
		for _, g := range body.Groups {
			names = append(names, g.BrokerName)
		}
		info, addr, err := s.syncStateData(ctx, slices.Compact(slices.Sorted(slices.Values(names))))
		switch {
		case err != nil:
			body.ControllerError = truncate(err.Error(), errorTextBytes)
		case info != nil:
			body.Controller = addr
			for i := range body.Groups {
				addController(&body.Groups[i], info)
			}
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// haGroups groups a sample's brokers by cluster and broker name, down ones included, with each
// slave's lag behind the group's master.
func haGroups(rows []brokerRow) []haGroup {
	type key struct{ cluster, name string }
	byKey := map[key]*haGroup{}
	for _, b := range rows {
		k := key{b.Cluster, b.BrokerName}
		g := byKey[k]
		if g == nil {
			g = &haGroup{Cluster: b.Cluster, BrokerName: b.BrokerName, Members: []haMember{}}
			byKey[k] = g
		}
		m := haMember{BrokerID: b.BrokerID, Role: b.Role, Addr: b.Addr, Status: b.Status, Error: b.Error}
		if b.Status == statusUp {
			m.MaxOffset = b.StoreBytes
		}
		g.Members = append(g.Members, m)
	}
	out := make([]haGroup, 0, len(byKey))
	for _, k := range slices.SortedFunc(maps.Keys(byKey), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.name, b.name))
	}) {
		g := byKey[k]
		fillLag(g)
		out = append(out, *g)
	}
	return out
}

// fillLag sets each slave's lag behind the group's registered master, and the group's largest.
func fillLag(g *haGroup) {
	var master *int64
	for _, m := range g.Members {
		if m.BrokerID == route.MasterID && m.Status == statusUp {
			master = m.MaxOffset
		}
	}
	g.MaxLagBytes = nil
	for i := range g.Members {
		m := &g.Members[i]
		if m.BrokerID == route.MasterID || master == nil || m.MaxOffset == nil {
			continue
		}
		lag := max(*master-*m.MaxOffset, 0) // a slave sampled a moment later may be ahead
		m.LagBytes = &lag
		if g.MaxLagBytes == nil || lag > *g.MaxLagBytes {
			g.MaxLagBytes = ptr(lag)
		}
	}
}

// addController adds the controller's view of g: its epochs and SyncStateSet, and whether each
// replica is in it and alive. A replica the name servers do not list (a slave that stopped
// before this dashboard saw it) is added from the controller's table.
func addController(g *haGroup, info *admin.BrokerReplicasInfo) {
	ri, ok := info.ReplicasInfoTable[g.BrokerName]
	if !ok {
		return
	}
	c := &haController{MasterBrokerID: ri.MasterBrokerID, MasterAddr: truncate(ri.MasterAddress, maxAddrBytes),
		MasterEpoch: ri.MasterEpoch, SyncStateSetEpoch: ri.SyncStateSetEpoch, SyncStateSet: []int64{}}
	replicas := 0
	mark := func(id int64, addr string, inSync, alive bool) {
		if replicas++; replicas > maxBrokers {
			return // the controller's table is network input
		}
		if inSync {
			c.SyncStateSet = append(c.SyncStateSet, id)
		}
		for i := range g.Members {
			if g.Members[i].Addr == addr {
				g.Members[i].InSync, g.Members[i].Alive = ptr(inSync), ptr(alive)
				return
			}
		}
		status := statusDown
		if alive {
			status = statusUp
		}
		role := "SLAVE"
		if id == ri.MasterBrokerID {
			role = "MASTER"
		}
		g.Members = append(g.Members, haMember{BrokerID: id, Role: role, Addr: truncate(addr, maxAddrBytes), Status: status,
			InSync: ptr(inSync), Alive: ptr(alive), Error: "not registered with the name servers"})
	}
	for _, r := range ri.InSyncReplicas {
		mark(r.BrokerID, r.BrokerAddress, true, r.Alive)
	}
	for _, r := range ri.NotInSyncReplicas {
		mark(r.BrokerID, r.BrokerAddress, false, r.Alive)
	}
	slices.Sort(c.SyncStateSet)
	g.Controller = c
}

// syncStateData asks the name servers, which host the controllers in controller mode, for the
// groups' replicas until the leader answers. Without an answer from any controller (each
// answers REQUEST_CODE_NOT_SUPPORTED or cannot be reached) there is no error: the cluster is
// not in controller mode, or nothing can be told; with one that refused (not the leader, no
// cluster secret) the error says why.
func (s *Server) syncStateData(ctx context.Context, brokerNames []string) (*admin.BrokerReplicasInfo, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.refresh+time.Second)
	defer cancel()
	var errs []error
	controller := false
	nameServers := s.src.NameServers()
	for _, addr := range nameServers[:min(len(nameServers), maxControllersAsked)] {
		info, err := s.src.SyncStateData(ctx, addr, brokerNames)
		if err == nil {
			return info, addr, nil
		}
		var re *remoting.ResponseError
		if errors.As(err, &re) {
			if re.Code == remoting.RequestCodeNotSupported {
				continue
			}
			controller = true
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if !controller {
		return nil, "", nil
	}
	return nil, "", fmt.Errorf("no controller leader answered: %w", errors.Join(errs...))
}
