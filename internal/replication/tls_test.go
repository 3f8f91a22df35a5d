package replication

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/tlstest"
)

// A master with TLS replicates to a slave that dials TLS trusting its CA, with and without
// the secret on top; a plaintext peer gets nothing but a failed handshake.
func TestTLSReplicates(t *testing.T) {
	certs, err := tlstest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"", testSecret} {
		t.Run("secret="+map[bool]string{true: "yes", false: "no"}[secret != ""], func(t *testing.T) {
			master := openStore(t, t.TempDir(), false)
			mopts := testMasterOptions(t)
			mopts.TLSConfig, mopts.Secret = certs.Server(), []byte(secret)
			m, _ := startMaster(t, master.Store, mopts)
			putN(t, master.Store, 0, 20)

			slave := openStore(t, t.TempDir(), true)
			sopts := testSlaveOptions(t, m.Addr())
			sopts.TLSConfig, sopts.Secret = certs.Client(), []byte(secret)
			startSlave(t, slave.Store, sopts, nil)
			putN(t, master.Store, 20, 200)
			m.Notify()
			waitCaughtUp(t, master.Store, slave.Store)
			assertLogsEqual(t, master.Store, slave.Store)
			if err := m.WaitForAck(context.Background(), master.MaxPhyOffset()); err != nil {
				t.Fatalf("WaitForAck: %v", err)
			}

			// A plaintext peer's offset report is no TLS handshake: the master closes it
			// without sending a byte of the log.
			c, err := net.Dial("tcp", m.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(make([]byte, reportBytes)); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, _ := io.ReadAll(c)
			if len(got) > 0 && got[0] != 0x15 { // a TLS alert record is all it may see
				t.Fatalf("a plaintext peer received %d bytes starting %x", len(got), got[:min(8, len(got))])
			}
		})
	}
}
