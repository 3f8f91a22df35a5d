package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/storage"
)

// The kill loops' three deployments (killloop_test.go says what each checks).

// runSyncFlush: one node with SYNC_FLUSH, killed and restarted on its port and store.
func (l *killLoop) runSyncFlush() {
	t := l.t
	addr, dir := reserveAddr(t), t.TempDir()
	args := append([]string{"-listen", addr, "-store", dir, "-ha-listen", "127.0.0.1:0", "-flush", "sync"}, klStoreArgs...)
	opts := klStoreOptions(storage.SyncFlush, false)
	node := startLoggedNode(t, l.bin, args...)
	l.klCreateTopic(node.broker, node.namesrv)
	l.startLoad(node.namesrv)
	defer l.stopLoad()
	for l.more() {
		l.runLoad()
		killed := time.Now()
		l.kill(node, dir, opts, l.ackedSnapshot(), true)
		node = l.restart(args, dir, opts, l.ackedSnapshot, true)
		back := time.Now()
		l.quiesce()
		parked := time.Now()
		l.checkMaster("the restarted node", node.broker)
		read := time.Now()
		l.collect()
		t.Logf("kill %d: started again %v after, senders parked in %v, read back in %v, store copy checked %v later",
			l.kills, back.Sub(killed).Round(time.Millisecond), parked.Sub(back).Round(time.Millisecond),
			read.Sub(parked).Round(time.Millisecond), time.Since(read).Round(time.Millisecond))
	}
	l.finish("sync-flush")
}

// klSyncMasterDown is the longest a killed master or slave stays down.
const klSyncMasterDown = 500 * time.Millisecond

// runSyncMaster: a SYNC_MASTER and its SLAVE, either killed at random and restarted on its
// ports and store. The master's HA port is fixed and the slave is told it (-master-ha), so the
// slave finds a restarted master without waiting for a registration.
func (l *killLoop) runSyncMaster() {
	t := l.t
	mAddr, mHA, sAddr := reserveAddr(t), reserveAddr(t), reserveAddr(t)
	mDir, sDir := t.TempDir(), t.TempDir()
	margs := append([]string{"-listen", mAddr, "-store", mDir, "-role", "sync-master", "-ha-listen", mHA}, klStoreArgs...)
	sargs := append([]string{"-listen", sAddr, "-store", sDir, "-role", "slave", "-no-namesrv", "-namesrv", mAddr,
		"-master-ha", mHA, "-ha-listen", "127.0.0.1:0", "-ha-reconnect-interval", "100ms", "-slave-sync-period", "200ms"},
		klStoreArgs...)
	mOpts, sOpts := klStoreOptions(storage.AsyncFlush, false), klStoreOptions(storage.AsyncFlush, true)
	master := startLoggedNode(t, l.bin, margs...)
	slave := startLoggedNode(t, l.bin, sargs...)
	l.klCreateTopic(master.broker, master.namesrv)
	l.startLoad(master.namesrv)
	defer l.stopLoad()
	l.gate.open()
	waitFor(t, klWait, "a send acknowledged with the slave connected", func() bool { return len(l.ackedSnapshot()) > 0 })
	for l.more() {
		l.runLoad()
		// Every acknowledged message is on both: the slave reported it before the master
		// answered SEND_OK. A slave copies its master's consumer offsets, ahead of its own
		// data, and never serves as master here: its offsets are not checked.
		killed, victim := time.Now(), "master"
		if l.rng.IntN(2) == 0 {
			l.kill(master, mDir, mOpts, l.ackedSnapshot(), true)
			time.Sleep(l.randDur(klSyncMasterDown))
			master = l.restart(margs, mDir, mOpts, l.ackedSnapshot, true)
		} else {
			victim = "slave"
			l.kill(slave, sDir, sOpts, l.ackedSnapshot(), false)
			time.Sleep(l.randDur(klSyncMasterDown))
			slave = l.restart(sargs, sDir, sOpts, l.ackedSnapshot, false)
		}
		back := time.Now()
		l.quiesce()
		l.waitCaughtUp("the slave", master.broker, slave.broker)
		settled := time.Now()
		ids := l.checkMaster("the master", master.broker)
		l.checkReplica("the slave", slave.broker, ids)
		l.collect()
		t.Logf("kill %d: the %s; started again %v after, settled in %v, checked in %v", l.kills, victim,
			back.Sub(killed).Round(time.Millisecond), settled.Sub(back).Round(time.Millisecond), time.Since(settled).Round(time.Millisecond))
	}
	l.finish("sync-master")
}

// klControllerDown is the longest a killed master stays down: past the controllers' heartbeat
// timeout (1 s) about half the time, so it returns to a group that elected another master or,
// otherwise, before the controllers noticed.
const klControllerDown = 2500 * time.Millisecond

// runController: three controllers and three brokers of one group in controller mode with
// all-ack; the current master is killed and restarted on its ports and store.
func (l *killLoop) runController() {
	t := l.t
	raft := make([]string, 3)
	var peers, namesrvs []string
	for i := range raft {
		raft[i] = reserveAddr(t)
		peers = append(peers, fmt.Sprintf("n%d=%s", i, raft[i]))
	}
	for i := range raft {
		c := startLoggedNode(t, l.bin, append([]string{"-no-broker", "-listen", "127.0.0.1:0", "-store", t.TempDir(),
			"-controller-id", fmt.Sprint("n", i), "-controller-listen", raft[i],
			"-controller-peers", strings.Join(peers, ";")}, ctlControllerArgs...)...)
		namesrvs = append(namesrvs, c.namesrv)
	}
	ns := strings.Join(namesrvs, ";")
	brokers := make([]*loggedNode, 3)
	args, stores := make([][]string, 3), make([]string, 3)
	for i := range brokers {
		// Fixed ports: a killed broker returns on the addresses its group knows.
		stores[i] = t.TempDir()
		// A demoted master's restart waits for the sends it holds to stop waiting for replicas
		// that left (-ha-sync-flush-timeout, 5 s by default): 1 s keeps make test's run short.
		args[i] = append(append([]string{"-no-namesrv", "-namesrv", ns, "-controller", ns, "-broker-id", fmt.Sprint(i + 1),
			"-listen", reserveAddr(t), "-ha-listen", reserveAddr(t), "-store", stores[i], "-ha-reconnect-interval", "100ms",
			"-ha-sync-flush-timeout", "1s"}, ctlBrokerArgs...), klStoreArgs...)
		brokers[i] = startLoggedNode(t, l.bin, args[i]...)
	}
	opts := klStoreOptions(storage.AsyncFlush, false)
	adm, err := admin.New(admin.Options{NameServers: namesrvs})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	var first int
	waitFor(t, klWait, "a master", func() bool {
		for i, b := range brokers {
			if b.lastRole() == "master" {
				first = i
				return true
			}
		}
		return false
	})
	waitFor(t, klWait, "a SyncStateSet of all three", func() bool { return len(brokers[first].lastSyncStateSet()) == 3 })
	l.klCreateTopic(brokers[first].broker, namesrvs[0])
	// Slaves take topic configs from their master every -slave-sync-period: one promoted before
	// its first sync would serve the topic with the default 4 queues, as a RocketMQ slave
	// promoted before SlaveSynchronize ran would. That window is not what this loop tests.
	for i, b := range brokers {
		waitFor(t, klWait, fmt.Sprintf("broker %d to know the %d queues of %s", i+1, klQueues, klTopic), func() bool {
			o, err := topicMaxOffsets(l.client, b.broker, klTopic)
			return err == nil && len(o) == klQueues
		})
	}
	l.startLoad(namesrvs...)
	defer l.stopLoad()
	for l.more() {
		l.runLoad()
		m := l.currentMaster(adm, brokers)
		// The master holds every acknowledged message, and so does the SyncStateSet member
		// that replaces it: all-ack answered SEND_OK only once each member had it.
		hold := l.ackedSnapshot()
		killed := time.Now()
		l.kill(brokers[m], stores[m], opts, hold, true)
		time.Sleep(time.Until(killed.Add(l.randDur(klControllerDown))))
		killedM := m
		brokers[m] = l.restart(args[m], stores[m], opts, func() []ackedMsg { return hold }, true)
		back := time.Now()
		l.quiesce()
		m = l.currentMaster(adm, brokers)
		for i, b := range brokers {
			if i != m {
				l.waitCaughtUp(fmt.Sprint("broker ", i+1), brokers[m].broker, b.broker)
			}
		}
		settled := time.Now()
		ids := l.checkMaster(fmt.Sprintf("the master, broker %d", m+1), brokers[m].broker)
		for i, b := range brokers {
			if i != m {
				l.checkReplica(fmt.Sprint("broker ", i+1), b.broker, ids)
			}
		}
		l.collect()
		t.Logf("kill %d: master broker %d; started again %v after, master now broker %d; settled in %v, checked in %v",
			l.kills, killedM+1, back.Sub(killed).Round(time.Millisecond), m+1, settled.Sub(back).Round(time.Millisecond),
			time.Since(settled).Round(time.Millisecond))
	}
	l.finish("controller")
}

// currentMaster waits until the topic's route names a live broker as master and that
// broker's log says it serves as master (the route can still name the address of a killed
// master that returned as a slave).
func (l *killLoop) currentMaster(adm *admin.Admin, brokers []*loggedNode) int {
	t := l.t
	t.Helper()
	deadline := time.Now().Add(klWait)
	for {
		m := topicMasterIndex(t, adm, klTopic, brokers)
		if brokers[m].lastRole() == "master" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("kill %d: the route names broker %d as master, which does not serve as one after %v", l.kills, m+1, klWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastRole is "master" or "slave" from the node's last "serving as" log line, "" before one.
func (n *loggedNode) lastRole() string {
	role, _ := n.lastHA()
	return role
}

// lastSyncStateSet is the SyncStateSet of the node's last "serving as master" or
// "SyncStateSet changed" line, nil while it is not master.
func (n *loggedNode) lastSyncStateSet() []any {
	_, set := n.lastHA()
	return set
}

func (n *loggedNode) lastHA() (role string, set []any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.lines) - 1; i >= 0 && role == ""; i-- {
		if !strings.Contains(n.lines[i], "serving as") && !strings.Contains(n.lines[i], "SyncStateSet changed") {
			continue
		}
		var rec map[string]any
		if json.Unmarshal([]byte(n.lines[i]), &rec) != nil {
			continue
		}
		switch rec["message"] {
		case "SyncStateSet changed":
			if set == nil {
				set, _ = rec["sync_state_set"].([]any)
			}
		case "serving as master":
			role = "master"
			if set == nil {
				set, _ = rec["sync_state_set"].([]any)
			}
		case "serving as slave":
			return "slave", nil
		}
	}
	return role, set
}
