package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/acl"
	"github.com/mqgo/mq/internal/broker/services"
)

// The node's ACL as the broker's ACL administration codes change it (internal/broker/admin's
// acl.go): RocketMQ's mqadmin updateAclConfig, deleteAclConfig and updateGlobalWhiteAddr.

// serviceDeps are what the node hands the broker's services.
func (n *Node) serviceDeps() services.Deps {
	var d services.Deps
	if n.acl != nil {
		d.ACL = &aclAdmin{n: n}
	}
	return d
}

// aclFormatter is an ACL file that can also write itself (aclfile's, which has the YAML).
type aclFormatter interface {
	Format(cfg *acl.Config) ([]byte, error)
}

// aclAdmin changes the node's ACL where it comes from: the watched file, rewritten whole (as
// RocketMQ rewrites plain_acl.yml), or Options.Security.ACL in memory (a restart goes back to
// the options, as Node.UpdateACL). Changes are serialized; the file watcher reading the new
// file puts the same configuration in effect again, which counts no new version.
type aclAdmin struct {
	n  *Node
	mu sync.Mutex
}

func (a *aclAdmin) Snapshot() (acl.Config, int64, time.Time, string) {
	cfg, counter, at, _ := a.n.acl.Snapshot()
	file := ""
	if f, _ := a.n.opts.aclFile(); f != nil {
		file = f.Path()
	}
	return cfg, counter, at, file
}

func (a *aclAdmin) Update(change func(*acl.Config) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cfg, _, _, ok := a.n.acl.Snapshot()
	if !ok {
		return errors.New("ACL is off")
	}
	if err := change(&cfg); err != nil {
		return err
	}
	c, err := acl.New(&cfg)
	if err != nil {
		return err
	}
	if f, _ := a.n.opts.aclFile(); f != nil {
		w, ok := f.(aclFormatter)
		if !ok {
			return fmt.Errorf("the ACL file %s cannot be written by this node: edit it, it is read again when it changes", f.Path())
		}
		data, err := w.Format(&cfg)
		if err == nil {
			err = replaceFile(f.Path(), data)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", f.Path(), err)
		}
	}
	a.n.acl.Store(c)
	return nil
}

// replaceFile writes data to path through a temporary file renamed over it, so that the
// watcher never reads half a file, keeping the file's permissions (0600 for a new one: it holds
// secret keys).
func replaceFile(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}
