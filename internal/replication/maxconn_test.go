package replication

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestMasterMaxConnections: with MaxConnections peers connected (here silent ones, which hold
// a slot until HousekeepingInterval), a further connection is closed at once without a byte,
// even with a Secret (no challenge); a slot freed by a peer that leaves is taken again, by a
// slave that then replicates.
func TestMasterMaxConnections(t *testing.T) {
	for _, secret := range []string{"", testSecret} {
		name := "no secret"
		if secret != "" {
			name = "secret"
		}
		t.Run(name, func(t *testing.T) {
			master := openStore(t, t.TempDir(), false)
			opts := testMasterOptions(t)
			opts.MaxConnections = 2
			opts.HousekeepingInterval = time.Minute // only the cap may close a peer in time
			opts.HandshakeTimeout = time.Minute
			opts.Secret = []byte(secret)
			m, _ := startMaster(t, master.Store, opts)
			putN(t, master.Store, 0, 10)

			held := []net.Conn{dialMaster(t, m), dialMaster(t, m)}
			waitFor(t, "two connections to be served", func() bool { return m.served.Load() == 2 })
			for range 3 {
				extra := dialMaster(t, m)
				extra.SetReadDeadline(time.Now().Add(20 * time.Second)) // only against a hang
				got, err := io.ReadAll(extra)
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatal("a connection over the cap was kept")
				}
				if len(got) != 0 {
					t.Fatalf("a connection over the cap received %d bytes", len(got))
				}
			}
			if got := m.served.Load(); got != 2 {
				t.Fatalf("%d connections served, want 2", got)
			}

			held[0].Close()
			waitFor(t, "the slot to be freed", func() bool { return m.served.Load() == 1 })
			slave := openStore(t, t.TempDir(), true)
			sopts := testSlaveOptions(t, m.Addr())
			sopts.Secret = []byte(secret)
			startSlave(t, slave.Store, sopts, nil)
			waitCaughtUp(t, master.Store, slave.Store)
			assertLogsEqual(t, master.Store, slave.Store)
		})
	}
}

func TestMasterMaxConnectionsOption(t *testing.T) {
	st := openStore(t, t.TempDir(), false)
	m, err := NewMaster(st.Store, MasterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.opts.MaxConnections != DefaultMaxConnections {
		t.Errorf("default MaxConnections %d, want %d", m.opts.MaxConnections, DefaultMaxConnections)
	}
	if _, err := NewMaster(st.Store, MasterOptions{MaxConnections: -1}); err == nil {
		t.Error("NewMaster accepted MaxConnections -1")
	}
}
