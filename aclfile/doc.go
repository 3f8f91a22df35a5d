// Package aclfile reads RocketMQ's plain_acl.yml into an acl.Config (Parse, Load) and hands
// a node a file to load at start and reload when it changes (Watch, for
// mq.Options.Security.ACLFile).
//
// It is a package of its own so that `import "github.com/mqgo/mq"` links no YAML parser: an
// application that configures its accounts in Go (Options.Security.ACL, Node.UpdateACL) never
// imports it, and Go's pruned module graph leaves go.yaml.in/yaml out of its build.
package aclfile
