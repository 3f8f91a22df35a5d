package aclfile

import (
	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/optional"
)

// Watch is the value of mq.Options.Security.ACLFile that turns ACL on from the plain_acl.yml
// at path: the node reads it at start (a file that is missing or does not parse or validate
// fails the start) and then every Security.ACLWatchInterval, as RocketMQ's FileWatchService;
// a changed file that does not parse or validate is logged and the accounts in effect stay.
// Replace the file by renaming a complete one over it: a reader can catch an in-place rewrite
// half done.
func Watch(path string) optional.ACLFile { return optional.NewACLFile(file(path)) }

// file is the implementation the node takes out of optional.ACLFile (internal/addon.ACLFile).
type file string

func (f file) Path() string                         { return string(f) }
func (file) Parse(data []byte) (*acl.Config, error) { return Parse(data) }
