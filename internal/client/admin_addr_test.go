package client

import "testing"

// AdminAddr prefers the master and falls back to the lowest-id slave, as RocketMQ's
// findBrokerAddressInAdmin, so offset reads work while a master is down.
func TestAdminAddr(t *testing.T) {
	i := &Instance{brokers: map[string]map[int64]string{
		"with-master": {0: "m:1", 1: "s1:1", 2: "s2:1"},
		"slaves-only": {3: "s3:1", 2: "s2:1"},
		"empty":       {},
	}}
	for name, want := range map[string]string{"with-master": "m:1", "slaves-only": "s2:1", "empty": "", "unknown": ""} {
		if got := i.AdminAddr(name); got != want {
			t.Errorf("AdminAddr(%q) = %q, want %q", name, got, want)
		}
	}
	if got := i.MasterAddr("slaves-only"); got != "" {
		t.Errorf("MasterAddr without a master = %q", got)
	}
}
