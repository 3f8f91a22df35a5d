package controller

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Error is a refusal with RocketMQ's response code (remoting.Controller*), which the remoting
// processors answer with.
type Error struct {
	Code   int32
	Remark string
}

func (e *Error) Error() string {
	return "controller: " + remoting.ResponseCodeName(e.Code) + ": " + e.Remark
}

func newError(code int32, format string, args ...any) *Error {
	return &Error{Code: code, Remark: fmt.Sprintf(format, args...)}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// checkIdentity refuses an empty, over-long, invalid UTF-8 or non-printable cluster name,
// broker name or address: they come from the network, are kept in the replicated state and are
// printed by admin tools. Broker names may hold dots (an Apache broker's default is its host
// name), so they are not held to the topic charset.
func checkIdentity(field, s string, limit int) error {
	if s == "" {
		return newError(remoting.ControllerInvalidRequest, "%s is empty", field)
	}
	if len(s) > limit || !utf8.ValidString(s) {
		return newError(remoting.ControllerInvalidRequest, "%s %s is longer than %d bytes or not UTF-8", field, names.Quote(s, len(s)), limit)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == ';' {
			return newError(remoting.ControllerInvalidRequest, "%s %s holds a control character or ';'", field, names.Quote(s, len(s)))
		}
	}
	return nil
}

func checkGroupName(cluster, brokerName string) error {
	if err := checkIdentity("clusterName", cluster, maxIdentityBytes); err != nil {
		return err
	}
	return checkIdentity("brokerName", brokerName, maxIdentityBytes)
}

func checkBrokerID(id int64) error {
	if id < FirstBrokerID || id > maxBrokerID {
		return newError(remoting.ControllerBrokerIDInvalid, "broker id %d is out of [%d, %d]", id, FirstBrokerID, maxBrokerID)
	}
	return nil
}

// leaderCheck is the first step of every request that reads or changes the groups.
func (c *Controller) leaderCheck() error {
	if !c.IsLeader() {
		return ErrNotLeader
	}
	return nil
}

// Heartbeat records a broker's heartbeat (BROKER_HEARTBEAT). Every controller takes them, as
// brokers send them to all; only brokers that the state knows are kept, which bounds the table.
func (c *Controller) Heartbeat(h *protocol.BrokerHeartbeatRequestHeader) error {
	return c.heartbeat(h, nil)
}

func (c *Controller) heartbeat(h *protocol.BrokerHeartbeatRequestHeader, ch remoting.Channel) error {
	if err := checkGroupName(h.ClusterName, h.BrokerName); err != nil {
		return err
	}
	if err := checkIdentity("brokerAddr", h.BrokerAddr, maxAddrBytes); err != nil {
		return err
	}
	if err := checkBrokerID(h.BrokerID); err != nil {
		return err
	}
	g, ok := c.fsm.group(h.BrokerName)
	if !ok || g.Cluster != h.ClusterName {
		return newError(remoting.ControllerBrokerNeedToBeRegistered, "broker-set %s of cluster %s is not registered", h.BrokerName, h.ClusterName)
	}
	if _, ok := g.Replicas[h.BrokerID]; !ok {
		return newError(remoting.ControllerBrokerNeedToBeRegistered, "broker id %d is not registered in %s", h.BrokerID, h.BrokerName)
	}
	timeout := c.opts.BrokerHeartbeatTimeout
	if h.HeartbeatTimeoutMills > 0 {
		timeout = min(time.Duration(h.HeartbeatTimeoutMills)*time.Millisecond, maxHeartbeatTimeout)
	}
	prio := h.ElectionPriority
	if prio < 0 {
		prio = math.MaxInt32 // absent: the lowest, as Java's default
	}
	c.live.heartbeat(BrokerLive{Cluster: h.ClusterName, BrokerName: h.BrokerName, BrokerID: h.BrokerID,
		Addr: h.BrokerAddr, Timeout: timeout, Epoch: h.Epoch, MaxOffset: h.MaxOffset,
		ConfirmOffset: h.ConfirmOffset, ElectionPriority: prio, ch: ch}, time.Now())
	return nil
}

// BrokerLive returns what this controller last heard from a broker.
func (c *Controller) BrokerLive(brokerName string, id int64) (BrokerLive, bool) {
	return c.live.get(brokerName, id)
}

// NextBrokerID is CONTROLLER_GET_NEXT_BROKER_ID: the id a new broker of the group would get.
func (c *Controller) NextBrokerID(cluster, brokerName string) (int64, error) {
	if err := c.leaderCheck(); err != nil {
		return 0, err
	}
	if err := checkGroupName(cluster, brokerName); err != nil {
		return 0, err
	}
	g, ok := c.fsm.group(brokerName)
	if !ok {
		return FirstBrokerID, nil
	}
	return g.NextBrokerID, nil
}

// ApplyBrokerID is CONTROLLER_APPLY_BROKER_ID: the broker claims id; checkCode is
// "<address>;<time>" and makes the claim repeatable by the same broker only. The first broker of
// a group must claim FirstBrokerID.
func (c *Controller) ApplyBrokerID(cluster, brokerName string, id int64, checkCode string) error {
	if err := c.leaderCheck(); err != nil {
		return err
	}
	if err := checkGroupName(cluster, brokerName); err != nil {
		return err
	}
	if err := checkBrokerID(id); err != nil {
		return err
	}
	if len(checkCode) > maxCheckCodeBytes || !utf8.ValidString(checkCode) {
		return newError(remoting.ControllerInvalidRequest, "registerCheckCode is longer than %d bytes or not UTF-8", maxCheckCodeBytes)
	}
	addr, _, _ := strings.Cut(checkCode, ";")
	if err := checkIdentity("registerCheckCode address", addr, maxAddrBytes); err != nil {
		return err
	}
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	if g, ok := c.fsm.group(brokerName); ok {
		if g.Cluster != cluster {
			return newError(remoting.ControllerInvalidRequest, "broker-set %s belongs to cluster %s", brokerName, g.Cluster)
		}
	} else if c.fsm.groupCount() >= maxBrokerGroups {
		return newError(remoting.ControllerInvalidRequest, "%d broker-sets registered already", maxBrokerGroups)
	}
	_, err := c.proposeChecked(&command{Op: opApplyBrokerID, Cluster: cluster, BrokerName: brokerName, BrokerID: id, Addr: addr, CheckCode: checkCode})
	return err
}

// proposeChecked proposes and turns a refusal of the state machine into an *Error.
func (c *Controller) proposeChecked(cmd *command) (Group, error) {
	res, err := c.propose(cmd)
	if err != nil {
		return Group{}, err
	}
	if res.Code != remoting.Success {
		return Group{}, &Error{Code: res.Code, Remark: res.Remark}
	}
	return res.Group, nil
}

// ReplicaInfo is a group's master and SyncStateSet: the answer to CONTROLLER_REGISTER_BROKER
// and CONTROLLER_GET_REPLICA_INFO. MasterID is NoMaster, MasterAddr "", when there is none.
type ReplicaInfo struct {
	MasterID          int64
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
}

func replicaInfoOf(g *Group) ReplicaInfo {
	return ReplicaInfo{MasterID: g.MasterID, MasterAddr: g.MasterAddr(), MasterEpoch: g.MasterEpoch,
		SyncStateSet: slices.Clone(g.SyncStateSet), SyncStateSetEpoch: g.SyncStateSetEpoch}
}

// RegisterBroker is CONTROLLER_REGISTER_BROKER: a broker with an id says where it is and learns
// the master, which is reported only while alive (MasterID NoMaster otherwise; the broker then
// asks for an election). A changed address is recorded.
func (c *Controller) RegisterBroker(cluster, brokerName string, id int64, addr string) (ReplicaInfo, error) {
	if err := c.leaderCheck(); err != nil {
		return ReplicaInfo{}, err
	}
	if err := checkGroupName(cluster, brokerName); err != nil {
		return ReplicaInfo{}, err
	}
	if err := checkIdentity("brokerAddress", addr, maxAddrBytes); err != nil {
		return ReplicaInfo{}, err
	}
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	g, ok := c.fsm.group(brokerName)
	if !ok || g.Cluster != cluster {
		return ReplicaInfo{}, newError(remoting.ControllerBrokerNeedToBeRegistered, "broker-set %s of cluster %s is not registered", brokerName, cluster)
	}
	r, ok := g.Replicas[id]
	if !ok {
		return ReplicaInfo{}, newError(remoting.ControllerBrokerNeedToBeRegistered, "broker id %d is not registered in %s", id, brokerName)
	}
	if r.Addr != addr {
		ng, err := c.proposeChecked(&command{Op: opUpdateAddr, BrokerName: brokerName, BrokerID: id, Addr: addr})
		if err != nil {
			return ReplicaInfo{}, err
		}
		g = ng
	}
	info := replicaInfoOf(&g)
	if g.MasterID == NoMaster || !c.live.alive(brokerName, g.MasterID, time.Now()) {
		info.MasterID, info.MasterAddr, info.MasterEpoch = NoMaster, "", -1
	}
	return info, nil
}

// GetReplicaInfo is CONTROLLER_GET_REPLICA_INFO.
func (c *Controller) GetReplicaInfo(brokerName string) (ReplicaInfo, error) {
	if err := c.leaderCheck(); err != nil {
		return ReplicaInfo{}, err
	}
	if err := checkIdentity("brokerName", brokerName, maxIdentityBytes); err != nil {
		return ReplicaInfo{}, err
	}
	g, ok := c.fsm.group(brokerName)
	if !ok {
		return ReplicaInfo{}, newError(remoting.ControllerBrokerMetadataNotExist, "broker-set %s is not registered", brokerName)
	}
	return replicaInfoOf(&g), nil
}

// AlterSyncStateSet is CONTROLLER_ALTER_SYNC_STATE_SET: the master of the group, under the
// current master epoch and set epoch, replaces the SyncStateSet with newSet, whose members must
// be registered and alive and include the master. It returns the new set's epoch.
func (c *Controller) AlterSyncStateSet(brokerName string, masterID int64, masterEpoch int32, newSet protocol.SyncStateSet) (int32, error) {
	if err := c.leaderCheck(); err != nil {
		return 0, err
	}
	if err := checkIdentity("brokerName", brokerName, maxIdentityBytes); err != nil {
		return 0, err
	}
	if len(newSet.SyncStateSet) > protocol.MaxSyncStateSetSize {
		return 0, newError(remoting.ControllerInvalidReplicas, "%d members, at most %d", len(newSet.SyncStateSet), protocol.MaxSyncStateSetSize)
	}
	set := slices.Sorted(slices.Values(newSet.SyncStateSet))
	set = slices.Compact(set)
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	g, ok := c.fsm.group(brokerName)
	if !ok {
		return 0, newError(remoting.ControllerAlterSyncStateSetFailed, "broker metadata of %s does not exist", brokerName)
	}
	if slices.Equal(set, g.SyncStateSet) {
		return 0, newError(remoting.ControllerAlterSyncStateSetFailed, "the new SyncStateSet equals the old one")
	}
	if g.MasterID == NoMaster || g.MasterID != masterID {
		return 0, newError(remoting.ControllerInvalidMaster, "the master of %s is %d, not %d", brokerName, g.MasterID, masterID)
	}
	if masterEpoch != g.MasterEpoch {
		return 0, newError(remoting.ControllerFencedMasterEpoch, "the master epoch of %s is %d, not %d", brokerName, g.MasterEpoch, masterEpoch)
	}
	if newSet.SyncStateSetEpoch != g.SyncStateSetEpoch {
		return 0, newError(remoting.ControllerFencedSyncStateSetEpoch, "the SyncStateSet epoch of %s is %d, not %d", brokerName, g.SyncStateSetEpoch, newSet.SyncStateSetEpoch)
	}
	now := time.Now()
	for _, id := range set {
		if _, ok := g.Replicas[id]; !ok {
			return 0, newError(remoting.ControllerInvalidReplicas, "broker id %d is not registered in %s", id, brokerName)
		}
		if !c.live.alive(brokerName, id, now) {
			return 0, newError(remoting.ControllerBrokerNotAlive, "broker id %d of %s is not alive", id, brokerName)
		}
	}
	if _, ok := slices.BinarySearch(set, g.MasterID); !ok {
		return 0, newError(remoting.ControllerAlterSyncStateSetFailed, "the new SyncStateSet lacks the master %d", g.MasterID)
	}
	ng, err := c.proposeChecked(&command{Op: opAlterSyncSet, BrokerName: brokerName, BrokerID: masterID, IDs: set,
		ExpectMasterEpoch: g.MasterEpoch, ExpectSyncStateSetEpoch: g.SyncStateSetEpoch})
	if err != nil {
		return 0, err
	}
	return ng.SyncStateSetEpoch, nil
}

// Election is the answer to CONTROLLER_ELECT_MASTER: the group's master after it, and its
// members for the notification.
type Election struct {
	ReplicaInfo
	Cluster    string
	BrokerName string
	Members    map[int64]string
}

// ElectMaster is CONTROLLER_ELECT_MASTER. brokerID is the broker asking to be the group's
// first master (a broker's trigger), the broker an admin designates (designate), or NoMaster
// (the controller's own trigger). A live master in the candidates stays: the answer then holds
// it with an *Error of code ControllerMasterStillExist. A new master is told to the group's
// live brokers.
func (c *Controller) ElectMaster(cluster, brokerName string, brokerID int64, designate bool) (Election, error) {
	if err := c.leaderCheck(); err != nil {
		return Election{}, err
	}
	if cluster != "" {
		if err := checkIdentity("clusterName", cluster, maxIdentityBytes); err != nil {
			return Election{}, err
		}
	}
	if err := checkIdentity("brokerName", brokerName, maxIdentityBytes); err != nil {
		return Election{}, err
	}
	if brokerID != NoMaster {
		if err := checkBrokerID(brokerID); err != nil {
			return Election{}, err
		}
	}
	el, err := c.elect(brokerName, brokerID, designate)
	if err == nil {
		c.notifyRoleChanged(&el)
	}
	return el, err
}

func (c *Controller) elect(brokerName string, brokerID int64, designate bool) (Election, error) {
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	g, ok := c.fsm.group(brokerName)
	if !ok {
		return Election{}, newError(remoting.ControllerBrokerNeedToBeRegistered, "broker-set %s is not registered", brokerName)
	}
	newMaster := NoMaster
	if g.MasterEpoch == 0 && brokerID != NoMaster {
		newMaster = brokerID // the group's first master: whoever asks first
	}
	if newMaster == NoMaster {
		prefer := NoMaster
		if designate {
			prefer = brokerID
		}
		var all []int64
		if c.opts.ElectUncleanMaster {
			all = slices.Sorted(maps.Keys(g.Replicas))
		}
		newMaster = c.policy(&g, g.SyncStateSet, all, prefer, time.Now())
	}
	if newMaster != NoMaster && newMaster == g.MasterID {
		el := electionOf(&g)
		return el, newError(remoting.ControllerMasterStillExist, "the master %d of %s is still alive", g.MasterID, brokerName)
	}
	if newMaster == NoMaster {
		if brokerID == NoMaster && g.MasterID != NoMaster {
			// The controller's trigger: the master is dead and nobody may replace it. Record
			// that, so nobody is sent to a dead master.
			if _, err := c.proposeChecked(&command{Op: opElectMaster, BrokerName: brokerName, BrokerID: NoMaster,
				ExpectMasterEpoch: g.MasterEpoch, ExpectSyncStateSetEpoch: g.SyncStateSetEpoch}); err != nil {
				return Election{}, err
			}
			c.log.Warn().Str("brokerName", brokerName).Int64("oldMaster", g.MasterID).Msg("master is dead and no broker can replace it")
			return Election{}, newError(remoting.ControllerMasterNotAvailable, "the master of %s is down and no broker can replace it", brokerName)
		}
		return Election{}, newError(remoting.ControllerElectMasterFailed, "no broker of %s can be master", brokerName)
	}
	ng, err := c.proposeChecked(&command{Op: opElectMaster, BrokerName: brokerName, BrokerID: newMaster,
		ExpectMasterEpoch: g.MasterEpoch, ExpectSyncStateSetEpoch: g.SyncStateSetEpoch})
	if err != nil {
		return Election{}, err
	}
	c.log.Info().Str("brokerName", brokerName).Int64("master", newMaster).Int32("masterEpoch", ng.MasterEpoch).Msg("elected master")
	return electionOf(&ng), nil
}

func electionOf(g *Group) Election {
	members := make(map[int64]string, len(g.Replicas))
	for id, r := range g.Replicas {
		members[id] = r.Addr
	}
	return Election{ReplicaInfo: replicaInfoOf(g), Cluster: g.Cluster, BrokerName: g.BrokerName, Members: members}
}

// policy is RocketMQ's DefaultElectPolicy: among the live members of the SyncStateSet, then
// (only when all is given: unclean election) among all live replicas, keep the old master if
// it is alive and not overruled by prefer; else prefer if it is a live candidate; else the one
// with the highest (epoch, max offset), then the lowest election priority, then the lowest id.
func (c *Controller) policy(g *Group, inSync, all []int64, prefer int64, now time.Time) int64 {
	for _, cands := range [][]int64{inSync, all} {
		var live []BrokerLive
		for _, id := range cands {
			if b, ok := c.live.get(g.BrokerName, id); ok && b.alive(now) {
				live = append(live, b)
			}
		}
		if len(live) == 0 {
			continue
		}
		has := func(id int64) bool {
			return slices.ContainsFunc(live, func(b BrokerLive) bool { return b.BrokerID == id })
		}
		if g.MasterID != NoMaster && has(g.MasterID) && (prefer == NoMaster || prefer == g.MasterID) {
			return g.MasterID
		}
		if prefer != NoMaster {
			if has(prefer) {
				return prefer
			}
			continue // RocketMQ too looks for it among all replicas next, when allowed
		}
		best := slices.MinFunc(live, func(a, b BrokerLive) int {
			return cmp.Or(cmp.Compare(b.Epoch, a.Epoch), cmp.Compare(b.MaxOffset, a.MaxOffset),
				cmp.Compare(a.ElectionPriority, b.ElectionPriority), cmp.Compare(a.BrokerID, b.BrokerID))
		})
		return best.BrokerID
	}
	return NoMaster
}

// scanInactiveMasters elects a new master for every group whose master is dead while one of
// its brokers lives (RocketMQ's scanInactiveMasterAndTriggerReelect), trying up to
// ElectMasterMaxRetryCount times. Unlike RocketMQ it also elects for a group left without a
// master when a member of its SyncStateSet returns, instead of waiting for that broker to ask.
func (c *Controller) scanInactiveMasters() {
	now := time.Now()
	for _, g := range c.fsm.groups() {
		if g.MasterID != NoMaster && c.live.alive(g.BrokerName, g.MasterID, now) {
			continue
		}
		if g.MasterID == NoMaster && g.MasterEpoch == 0 {
			continue // never had one: its first broker asks
		}
		anyAlive := false
		for id := range g.Replicas {
			if c.live.alive(g.BrokerName, id, now) {
				anyAlive = true
				break
			}
		}
		if !anyAlive {
			continue
		}
		for range c.opts.ElectMasterMaxRetryCount {
			if !c.IsLeader() {
				return
			}
			el, err := c.elect(g.BrokerName, NoMaster, false)
			if err == nil {
				c.notifyRoleChanged(&el)
				break
			}
			var e *Error
			if errors.As(err, &e) {
				break // a decision, not a failure to propose: retrying decides the same
			}
			c.log.Warn().Err(err).Str("brokerName", g.BrokerName).Msg("election failed")
		}
	}
}

// notifyRoleChanged sends NOTIFY_BROKER_ROLE_CHANGED one-way to the group's live brokers, on the
// connection their heartbeats came on, as RocketMQ's ControllerManager does after an election.
// A broker that misses it learns the same from its next CONTROLLER_REGISTER_BROKER or
// CONTROLLER_GET_REPLICA_INFO.
func (c *Controller) notifyRoleChanged(el *Election) {
	h := protocol.NotifyBrokerRoleChangedRequestHeader{MasterBrokerID: el.MasterID, MasterAddress: el.MasterAddr,
		MasterEpoch: el.MasterEpoch, SyncStateSetEpoch: el.SyncStateSetEpoch}
	body := (&protocol.SyncStateSet{SyncStateSet: el.SyncStateSet, SyncStateSetEpoch: el.SyncStateSetEpoch}).Encode()
	now := time.Now()
	for _, id := range slices.Sorted(maps.Keys(el.Members)) {
		b, ok := c.live.get(el.BrokerName, id)
		if !ok || !b.alive(now) || b.ch == nil || b.ch.Closed() {
			continue
		}
		req := remoting.NewRequest(remoting.NotifyBrokerRoleChanged, remoting.EncodeHeader(&h), body)
		if err := b.ch.InvokeOneway(req); err != nil {
			c.log.Debug().Err(err).Str("brokerName", el.BrokerName).Int64("brokerId", id).Msg("role change notification not sent")
		}
	}
}

// SyncStateData is CONTROLLER_GET_SYNC_STATE_DATA: each named group's master and replicas, in
// sync or not, alive or not. Unknown names are left out.
func (c *Controller) SyncStateData(brokerNames []string) (protocol.BrokerReplicasInfo, error) {
	out := protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{}}
	if err := c.leaderCheck(); err != nil {
		return out, err
	}
	now := time.Now()
	for _, name := range brokerNames {
		g, ok := c.fsm.group(name)
		if !ok {
			continue
		}
		info := protocol.ReplicasInfo{MasterBrokerID: g.MasterID, MasterAddress: g.MasterAddr(), MasterEpoch: g.MasterEpoch,
			SyncStateSetEpoch: g.SyncStateSetEpoch, InSyncReplicas: []protocol.ReplicaIdentity{}, NotInSyncReplicas: []protocol.ReplicaIdentity{}}
		for _, id := range slices.Sorted(maps.Keys(g.Replicas)) {
			r := protocol.ReplicaIdentity{BrokerName: name, BrokerID: id, BrokerAddress: g.Replicas[id].Addr, Alive: c.live.alive(name, id, now)}
			if g.InSync(id) {
				info.InSyncReplicas = append(info.InSyncReplicas, r)
			} else {
				info.NotInSyncReplicas = append(info.NotInSyncReplicas, r)
			}
		}
		out.ReplicasInfoTable[name] = info
	}
	return out, nil
}

// CleanBrokerData is CLEAN_BROKER_DATA: forget the listed broker ids of a group, or the whole
// group when ids is empty. Unless cleanLiving, live brokers are refused, and so is a whole group
// that still has a master.
func (c *Controller) CleanBrokerData(brokerName string, ids []int64, cleanLiving bool) error {
	if err := c.leaderCheck(); err != nil {
		return err
	}
	if err := checkIdentity("brokerName", brokerName, maxIdentityBytes); err != nil {
		return err
	}
	if len(ids) > maxReplicasPerGroup {
		return newError(remoting.ControllerInvalidCleanBrokerMetadata, "%d ids, at most %d", len(ids), maxReplicasPerGroup)
	}
	c.decideMu.Lock()
	defer c.decideMu.Unlock()
	g, ok := c.fsm.group(brokerName)
	if !ok {
		return newError(remoting.ControllerInvalidCleanBrokerMetadata, "broker-set %s does not exist", brokerName)
	}
	if !cleanLiving {
		if len(ids) == 0 && g.MasterID != NoMaster {
			return newError(remoting.ControllerInvalidCleanBrokerMetadata, "broker-set %s still has a master", brokerName)
		}
		now := time.Now()
		for _, id := range ids {
			if c.live.alive(brokerName, id, now) {
				return newError(remoting.ControllerInvalidCleanBrokerMetadata, "broker %d of %s is still alive", id, brokerName)
			}
		}
	}
	if _, err := c.proposeChecked(&command{Op: opCleanBroker, BrokerName: brokerName, IDs: ids}); err != nil {
		return err
	}
	c.live.forget(brokerName, ids)
	return nil
}

// parseIDList reads CLEAN_BROKER_DATA's "1;2;3".
func parseIDList(s string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	if n := strings.Count(s, ";"); n >= maxReplicasPerGroup {
		return nil, newError(remoting.ControllerInvalidCleanBrokerMetadata, "%d ids or more, at most %d", n, maxReplicasPerGroup)
	}
	parts := strings.Split(s, ";")
	ids := make([]int64, 0, len(parts))
	for _, p := range parts {
		if p == "" {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, newError(remoting.ControllerInvalidCleanBrokerMetadata, "broker id %s is not a number", names.Quote(p, len(p)))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Groups returns this controller's copy of every group (any controller; a follower's may lag).
func (c *Controller) Groups() []Group { return c.fsm.groups() }
