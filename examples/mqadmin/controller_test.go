package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/controller"
	"github.com/mqgo/mq/internal/freeport"
	"github.com/rs/zerolog"
)

const testClusterSecret = "mqadmin-test-cluster-secret"

// secretControllerNode is a node that is name service, controller and a broker in controller
// mode (its own controller), with a cluster secret.
func secretControllerNode(t *testing.T) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	raft := reserveListen(t)
	listen := reserveListen(t)
	n, err := mq.StartNode(mq.Options{
		Listen:       listen,
		Logger:       &l,
		StartTimeout: 30 * time.Second,
		Store:        config.Store{Dir: t.TempDir()},
		HA:           config.HA{Listen: "127.0.0.1:0"},
		Security:     config.Security{ClusterSecret: testClusterSecret},
		Controller: config.Controller{
			ID:          "n0",
			Impl:        controller.Raft(),
			Peers:       map[string]string{"n0": raft},
			RaftListen:  raft,
			RaftTimeout: 100 * time.Millisecond,
		},
		ControllerMode: config.ControllerMode{Addrs: []string{listen}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// reserveListen picks a free loopback port: the broker must know its controller's address,
// its own listener's, before it starts.
func reserveListen(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Controller commands and name-service writes on a deployment with a cluster secret: refused
// without it (exit 1, the remark says why), done with -cluster-secret or $MQ_CLUSTER_SECRET.
func TestClusterSecretCommands(t *testing.T) {
	n := secretControllerNode(t)
	addr := n.NameServerAddr()
	t.Setenv(envSecret, "")

	code, _, errOut := runCmd(t, "getControllerMetaData", "-a", addr)
	if code != exitFailed || !strings.Contains(errOut, "cluster secret could not be verified") {
		t.Fatalf("getControllerMetaData without the secret: exit %d, %s", code, errOut)
	}
	var md struct {
		LeaderID string `json:"controllerLeaderId"`
		IsLeader bool   `json:"isLeader"`
	}
	runJSON(t, &md, "getControllerMetaData", "-a", addr, "-cluster-secret", testClusterSecret)
	if md.LeaderID != "n0" || !md.IsLeader {
		t.Fatalf("metadata %+v", md)
	}

	code, _, errOut = runCmd(t, "electMaster", "-a", addr, "-c", "DefaultCluster", "-bn", "broker-a", "-b", "1")
	if code != exitFailed || !strings.Contains(errOut, "cluster secret could not be verified") {
		t.Fatalf("electMaster without the secret: exit %d, %s", code, errOut)
	}
	t.Setenv(envSecret, testClusterSecret)
	var el struct {
		MasterBrokerID int64 `json:"masterBrokerId"`
		MasterEpoch    int32 `json:"masterEpoch"`
	}
	runJSON(t, &el, "electMaster", "-a", addr, "-c", "DefaultCluster", "-bn", "broker-a", "-b", "1")
	if el.MasterBrokerID != 1 || el.MasterEpoch < 1 {
		t.Fatalf("election %+v", el)
	}

	mustRun(t, "updateTopic", "-n", addr, "-c", "DefaultCluster", "-t", "SecretTopic")
	t.Setenv(envSecret, "")
	code, _, errOut = runCmd(t, "deleteTopic", "-n", addr, "-c", "DefaultCluster", "-t", "SecretTopic")
	if code != exitFailed || !strings.Contains(errOut, "name-service write needs the cluster secret") {
		t.Fatalf("deleteTopic without the secret: exit %d, %s", code, errOut)
	}
	mustRun(t, "deleteTopic", "-n", addr, "-c", "DefaultCluster", "-t", "SecretTopic", "-cluster-secret", testClusterSecret)

	if code, _, errOut := runCmd(t, "topicList", "-n", addr, "-cluster-secret", "short"); code != exitUsage || !strings.Contains(errOut, "the cluster secret has 5 bytes, want at least 16") {
		t.Fatalf("a short secret: exit %d, %s", code, errOut)
	}
}
