package config

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/storage"
)

func newFlags(o *Options) (*flag.FlagSet, func() error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, BindFlags(fs, o)
}

// Flags of every kind land in their fields, by the names mqnode has always taken.
func TestBindFlagsParses(t *testing.T) {
	var o Options
	fs, applyEnv := newFlags(&o)
	err := fs.Parse([]string{"-listen", "127.0.0.1:0", "-namesrv", "a:1; b:2", "-store", "/s", "-flush", "sync",
		"-role", "slave", "-broker-id", "3", "-ha-tls", "-max-queue-nums", "64", "-transaction-timeout", "2s",
		"-delay-levels", "1s 3s", "-controller-peers", "n0=h:1;n1=h:2", "-tls-mode", "permissive",
		"-http-allowed-hosts", "x.example,y.example:80"})
	if err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(); err != nil {
		t.Fatal(err)
	}
	want := Options{Listen: "127.0.0.1:0", NameServers: []string{"a:1", "b:2"},
		Store:        Store{Dir: "/s", FlushDiskType: storage.SyncFlush},
		Broker:       Broker{Role: storage.Slave, ID: 3},
		HA:           HA{TLS: true},
		Limits:       Limits{MaxQueueNums: 64},
		Transactions: Transactions{Timeout: 2 * time.Second},
		Timers:       Timers{DelayLevels: []time.Duration{time.Second, 3 * time.Second}},
		Controller:   Controller{Peers: map[string]string{"n0": "h:1", "n1": "h:2"}},
		Security:     Security{TLSMode: "permissive"},
		HTTP:         HTTP{AllowedHosts: []string{"x.example", "y.example:80"}},
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", o, want)
	}
}

// A flag not given leaves its field zero (the node applies the default, so a default that
// depends on another setting, as the role on the broker id, stays right), and the help shows
// EnsureDefaults' value.
func TestBindFlagsDefaults(t *testing.T) {
	var o Options
	fs, _ := newFlags(&o)
	if err := fs.Parse([]string{"-broker-id", "1"}); err != nil {
		t.Fatal(err)
	}
	if o.Broker.Role != "" || o.Store.Dir != "" {
		t.Fatalf("unset flags wrote fields: %+v", o)
	}
	o.EnsureDefaults()
	if o.Broker.Role != storage.Slave {
		t.Fatalf("broker id 1 defaults to role %q", o.Broker.Role)
	}
	for name, def := range map[string]string{"store": DefaultStoreDir, "listen": DefaultListen,
		"max-topics": "5000", "max-subscription-groups": "10000", "transaction-timeout": "6s", "cluster": "DefaultCluster"} {
		if got := fs.Lookup(name).DefValue; got != def {
			t.Errorf("-%s default %q, want %q", name, got, def)
		}
	}
	if u := fs.Lookup("transaction-timeout").Usage; !strings.Contains(u, "RocketMQ transactionTimeOut") {
		t.Errorf("-transaction-timeout usage %q does not name RocketMQ's setting", u)
	}
}

// Secrets come from the environment when their flag is not given, and a given flag wins.
func TestBindFlagsEnv(t *testing.T) {
	t.Setenv("MQ_CLUSTER_SECRET", "from-the-environment-0123")
	t.Setenv("MQ_HA_SECRET", "ha-from-the-environment-0")
	var o Options
	fs, applyEnv := newFlags(&o)
	if err := fs.Parse([]string{"-ha-secret", "ha-from-the-flag-0123456"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(); err != nil {
		t.Fatal(err)
	}
	if o.Security.ClusterSecret != "from-the-environment-0123" || o.HA.Secret != "ha-from-the-flag-0123456" {
		t.Fatalf("cluster secret %q, HA secret %q", o.Security.ClusterSecret, o.HA.Secret)
	}
}

// Bad values are refused with the flag's name and what was wrong.
func TestBindFlagsRefuses(t *testing.T) {
	for _, args := range [][]string{{"-flush", "sometimes"}, {"-role", "leader"}, {"-broker-id", "x"},
		{"-max-queue-nums", "99999999999"}, {"-transaction-timeout", "6"}, {"-controller-peers", "n0"},
		{"-tls-mode", "on"}, {"-delay-levels", "1s x"}} {
		var o Options
		fs, _ := newFlags(&o)
		err := fs.Parse(args)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: error %v", args, err)
		}
	}
}

// The store's file sizes and disk protection are flags under RocketMQ's names, validated, and
// the ConsumeQueue size rounds up to whole units as RocketMQ's does.
func TestStoreDiskFlags(t *testing.T) {
	var o Options
	fs, _ := newFlags(&o)
	err := fs.Parse([]string{"-segment-bytes", "1048576", "-consume-queue-file-bytes", "30", "-max-hash-slot-num", "100",
		"-max-index-num", "400", "-disk-max-used-space-ratio", "70", "-disk-space-clean-forcibly-ratio", "80",
		"-disk-space-warning-level-ratio", "95", "-no-clean-file-forcibly", "-clean-resource-interval", "1s"})
	if err != nil {
		t.Fatal(err)
	}
	want := Store{SegmentBytes: 1 << 20, ConsumeQueueFileBytes: 30, MaxHashSlotNum: 100, MaxIndexNum: 400,
		DiskMaxUsedSpaceRatio: 70, DiskSpaceCleanForciblyRatio: 80, DiskSpaceWarningLevelRatio: 95,
		DisableCleanFileForcibly: true, CleanResourceInterval: time.Second}
	if o.Store != want {
		t.Fatalf("parsed %+v\nwant %+v", o.Store, want)
	}
	if u := o.Store.ConsumeQueueUnits(); u != 2 {
		t.Fatalf("30 bytes: %d units, want 2 (RocketMQ rounds up to whole 20-byte units)", u)
	}
	for _, f := range []string{"mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "diskMaxUsedSpaceRatio",
		"diskSpaceCleanForciblyRatio", "diskSpaceWarningLevelRatio", "cleanFileForciblyEnable=false", "maxHashSlotNum"} {
		found := false
		fs.VisitAll(func(fl *flag.Flag) { found = found || strings.Contains(fl.Usage, "(RocketMQ "+f+")") })
		if !found {
			t.Errorf("no flag names RocketMQ's %s", f)
		}
	}
	var d Store
	d.EnsureDefaults()
	if d.ConsumeQueueUnits() != storage.DefaultConsumeQueueUnits || d.DiskSpaceWarningLevelRatio != 90 ||
		d.DiskSpaceCleanForciblyRatio != 85 || d.DiskMaxUsedSpaceRatio != 75 {
		t.Fatalf("defaults %+v", d)
	}
	for _, bad := range []Store{{DiskSpaceWarningLevelRatio: 101}, {DiskMaxUsedSpaceRatio: -1}, {ConsumeQueueFileBytes: -20}, {MaxIndexNum: -1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
