package mq_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/internal/acl"
)

// The plain_acl.yml the README shows is one a node accepts.
func TestReadmeACLExampleLoads(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no yaml block")
	}
	cfg, err := aclfile.Parse(m[1])
	if err != nil {
		t.Fatalf("README's plain_acl.yml: %v", err)
	}
	if _, err := acl.New(cfg); err != nil {
		t.Fatalf("README's plain_acl.yml: %v", err)
	}
	if len(cfg.Accounts) != 2 || !cfg.Accounts[0].Admin || len(cfg.Accounts[1].TopicPerms) != 2 {
		t.Fatalf("README's plain_acl.yml read as %+v", cfg)
	}
}
