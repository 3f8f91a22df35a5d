package storage

import (
	"strings"
	"testing"
)

func TestDefaultRole(t *testing.T) {
	for id, want := range map[int64]BrokerRole{0: AsyncMaster, 1: Slave, 2: Slave} {
		if got := DefaultRole(id); got != want {
			t.Errorf("DefaultRole(%d) = %s, want %s", id, got, want)
		}
	}
}

func TestBrokerRoleCheck(t *testing.T) {
	for _, c := range []struct {
		role BrokerRole
		id   int64
		want string // "" for no error, else a part of the error
	}{
		{AsyncMaster, 0, ""},
		{SyncMaster, 0, ""},
		{Slave, 1, ""},
		{Slave, 7, ""},
		{AsyncMaster, 1, "a ASYNC_MASTER has BrokerID 0, not 1"},
		{SyncMaster, 2, "a SYNC_MASTER has BrokerID 0, not 2"},
		{Slave, 0, "a SLAVE needs a BrokerID above 0, not 0"},
		{Slave, -1, "a SLAVE needs a BrokerID above 0"},
		{"PRIMARY", 0, `BrokerRole "PRIMARY" is not ASYNC_MASTER, SYNC_MASTER or SLAVE`},
		{"", 0, `BrokerRole ""`},
		{"async_master", 0, "is not"},
	} {
		err := c.role.Check(c.id)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q with id %d: %v", c.role, c.id, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q with id %d: error %v, want one containing %q", c.role, c.id, err, c.want)
		}
	}
}

func TestFlushDiskTypeCheck(t *testing.T) {
	for _, ok := range []FlushDiskType{"", AsyncFlush, SyncFlush} {
		if err := ok.Check(); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []FlushDiskType{"SYNC", "sync_flush"} {
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "is neither ASYNC_FLUSH nor SYNC_FLUSH") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
	if o := (Options{Dir: "x"}).withDefaults(); o.FlushDiskType != AsyncFlush {
		t.Errorf("default flush %q, want %s", o.FlushDiskType, AsyncFlush)
	}
	if err := (Options{Dir: "x", FlushDiskType: "SOMETIMES"}).withDefaults().validate(); err == nil ||
		!strings.Contains(err.Error(), `storage: FlushDiskType "SOMETIMES"`) {
		t.Errorf("Options with a bad FlushDiskType: %v", err)
	}
}
