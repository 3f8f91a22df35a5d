package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/config"
	"github.com/rs/zerolog"
)

// TestACLCommands runs the ACL administration against a node that watches a plain_acl.yml: an
// account created by updateAclConfig signs requests at once and is in the file, versions count
// the changes, getAclConfig shows it, updateGlobalWhiteAddr rewrites the white list, and
// deleteAclConfig takes it away; a non-admin account is refused all of it.
func TestACLCommands(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(path, []byte(`accounts:
  - accessKey: cliAdmin1
    secretKey: cliAdminSecret
    admin: true
  - accessKey: cliUser01
    secretKey: cliUserSecret
    defaultTopicPerm: PUB
`), 0o600); err != nil {
		t.Fatal(err)
	}
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir()},
		Security: config.Security{ACLFile: aclfile.Watch(path)}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ns, addr := n.Addr(), n.BrokerAddr()
	asAdmin := func(args ...string) []string {
		return append(args, "-n", ns, "-ak", "cliAdmin1", "-sk", "cliAdminSecret")
	}

	// A non-admin account may not administer the ACL.
	if code, _, errOut := runCmd(t, "updateAclConfig", "-n", ns, "-ak", "cliUser01", "-sk", "cliUserSecret", "-b", addr,
		"-a", "sneaky01", "-s", "sneakySecret", "-m", "true"); code != exitFailed || !strings.Contains(errOut, "NO_PERMISSION") {
		t.Fatalf("updateAclConfig by a non-admin: exit %d %s", code, errOut)
	}
	out := mustRun(t, asAdmin("clusterAclConfigVersion", "-c", mq.DefaultClusterName)...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], fmt.Sprintf("%-16s  %-22s  %-22s  ", "#Cluster Name", "#Broker Name", "#Broker Addr")) ||
		lines[2] != "get cluster's plain access config version success." {
		t.Fatalf("clusterAclConfigVersion:\n%s", out)
	}
	f := strings.Fields(lines[1])
	if len(f) != 7 || f[2] != addr || f[3] != path {
		t.Fatalf("version row %q", lines[1])
	}
	before := f[4]

	out = mustRun(t, asAdmin("updateAclConfig", "-b", addr, "-a", "newAdmin1", "-s", "newAdminSecret", "-m", "true",
		"-t", "T1=PUB,T2=SUB")...)
	if out != "create or update plain access config to "+addr+" success.\n"+
		"PlainAccessConfig{accessKey='newAdmin1', whiteRemoteAddress='null', admin=true, defaultTopicPerm='null', defaultGroupPerm='null', topicPerms=[T1=PUB, T2=SUB], groupPerms=null}\n" {
		t.Errorf("updateAclConfig printed %q", out)
	}
	// In effect at once: the new admin account may create a topic.
	mustRun(t, "updateTopic", "-n", ns, "-b", addr, "-t", "AclAdmT", "-ak", "newAdmin1", "-sk", "newAdminSecret")
	cfg, err := aclfile.Load(path)
	if err != nil || !slices.ContainsFunc(cfg.Accounts, func(a mq.ACLAccount) bool {
		return a.AccessKey == "newAdmin1" && a.Admin && slices.Equal(a.TopicPerms, []string{"T1=PUB", "T2=SUB"})
	}) {
		t.Fatalf("the file after updateAclConfig: %+v %v", cfg, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode after the rewrite: %v %v", st.Mode(), err)
	}
	out = mustRun(t, asAdmin("clusterAclConfigVersion", "-b", addr)...)
	if f := strings.Fields(strings.Split(out, "\n")[0]); len(f) != 7 || f[4] == before ||
		!strings.HasSuffix(out, "get broker's plain access config version success.\n") {
		t.Errorf("clusterAclConfigVersion -b after the update (version was %s):\n%s", before, out)
	}

	out = mustRun(t, asAdmin("getAclConfig", "-b", addr)...)
	for _, want := range []string{"\nglobalWhiteRemoteAddresses: []\n\naccounts:\n", "  accessKey         : newAdmin1\n",
		"  secretKey         : newAdminSecret\n", "  admin             : true\n", "  topicPerms        : [T1=PUB, T2=SUB]\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("getAclConfig lacks %q:\n%s", want, out)
		}
	}

	if out := mustRun(t, asAdmin("updateGlobalWhiteAddr", "-c", mq.DefaultClusterName, "-g", "10.9.8.*,10.9.7.*")...); out != "update global white remote addresses to "+addr+" success.\n" {
		t.Errorf("updateGlobalWhiteAddr printed %q", out)
	}
	if cfg, err := aclfile.Load(path); err != nil || !slices.Equal(cfg.GlobalWhiteRemoteAddresses, []string{"10.9.8.*", "10.9.7.*"}) {
		t.Errorf("the file after updateGlobalWhiteAddr: %+v %v", cfg, err)
	}
	if code, _, errOut := runCmd(t, asAdmin("updateGlobalWhiteAddr", "-b", addr, "-g", "*", "-p", filepath.Join(dir, "other.yml"))...); code != exitFailed ||
		!strings.Contains(errOut, "is not this node's ACL file") {
		t.Errorf("updateGlobalWhiteAddr -p another file: exit %d %s", code, errOut)
	}
	// A change that does not check is refused whole: the file stays.
	if code, _, errOut := runCmd(t, asAdmin("updateAclConfig", "-b", addr, "-a", "badPerm01", "-s", "badPermSecret", "-i", "WRITE")...); code != exitFailed ||
		!strings.Contains(errOut, "defaultTopicPerm") {
		t.Errorf("a bad perm: exit %d %s", code, errOut)
	}

	out = mustRun(t, asAdmin("deleteAclConfig", "-b", addr, "-a", "newAdmin1")...)
	if out != "delete plain access config account from "+addr+" success.\naccount's accesskey is:newAdmin1\n" {
		t.Errorf("deleteAclConfig printed %q", out)
	}
	if code, _, errOut := runCmd(t, "updateTopic", "-n", ns, "-b", addr, "-t", "AclAdmT2", "-ak", "newAdmin1", "-sk", "newAdminSecret"); code != exitFailed ||
		!strings.Contains(errOut, "NO_PERMISSION") {
		t.Errorf("the deleted account still signs: exit %d %s", code, errOut)
	}
	if cfg, err := aclfile.Load(path); err != nil || slices.ContainsFunc(cfg.Accounts, func(a mq.ACLAccount) bool { return a.AccessKey == "newAdmin1" }) {
		t.Errorf("the file after deleteAclConfig: %+v %v", cfg, err)
	}
	if code, _, errOut := runCmd(t, asAdmin("deleteAclConfig", "-b", addr, "-a", "newAdmin1")...); code != exitFailed ||
		!strings.Contains(errOut, "has been deleted failed") {
		t.Errorf("deleting it again: exit %d %s", code, errOut)
	}
}

// TestACLCommandsWithACLOff: a node without ACL says so; nothing turns it on.
func TestACLCommandsWithACLOff(t *testing.T) {
	n := startNode(t)
	code, _, errOut := runCmd(t, "updateAclConfig", "-n", n.Addr(), "-b", n.BrokerAddr(), "-a", "someUser1", "-s", "someSecret1")
	if code != exitFailed || !strings.Contains(errOut, "ACL is off on this node") {
		t.Errorf("updateAclConfig with ACL off: exit %d %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "updateAclConfig", "-n", n.Addr(), "-b", n.BrokerAddr(), "-a", "someUser1"); code != exitUsage {
		t.Errorf("updateAclConfig without -s: exit %d", code)
	}
}

// TestACLCommandsInMemory: a node given its ACL in Options.Security.ACL changes it in memory;
// its version names no file.
func TestACLCommandsInMemory(t *testing.T) {
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir()},
		Security: config.Security{ACL: &mq.ACLConfig{Accounts: []mq.ACLAccount{{AccessKey: "memAdmin1", SecretKey: "memAdminSecret", Admin: true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	creds := []string{"-n", n.Addr(), "-ak", "memAdmin1", "-sk", "memAdminSecret"}
	mustRun(t, append([]string{"updateAclConfig", "-b", n.BrokerAddr(), "-a", "memUser01", "-s", "memUserSecret", "-i", "PUB"}, creds...)...)
	mustRun(t, "sendMessage", "-n", n.Addr(), "-t", "MemT", "-p", "x", "-ak", "memUser01", "-sk", "memUserSecret")
	out := mustRun(t, append([]string{"clusterAclConfigVersion", "-b", n.BrokerAddr()}, creds...)...)
	if f := strings.Fields(strings.Split(out, "\n")[0]); len(f) != 7 || f[3] != "Options.Security.ACL" || f[4] != "2" {
		t.Errorf("clusterAclConfigVersion of an ACL in memory:\n%s", out)
	}
}
