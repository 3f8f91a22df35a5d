package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// Minimum key lengths, exclusive, as RocketMQ's AclConstants.ACCESS_KEY_MIN_LENGTH and
// SECRET_KEY_MIN_LENGTH: a key must be longer than this.
const (
	accessKeyMinLength = 6
	secretKeyMinLength = 6
)

// Checker is a compiled Config: it decides each request as RocketMQ's PlainAccessValidator
// does. It never changes after New, so any number of goroutines may use it.
type Checker struct {
	global   []addrPattern
	accounts map[string]*account
	// cfg is a copy of what was compiled, for the admin reads (GET_BROKER_CLUSTER_ACL_CONFIG)
	// and the changes made from it (admin.go).
	cfg Config
}

// account is a compiled Account.
type account struct {
	accessKey    string
	signer       *remoting.Signer // keyed with the account's secret
	macs         *sync.Pool       // HMAC-SHA1 states keyed with it, for gRPC calls (call.go)
	white        addrPattern
	admin        bool
	ownsAll      bool // admin with no topic or group perms listed (RocketMQ: null resourcePermMap)
	defaultTopic perm
	defaultGroup perm
	topics       map[string]perm
	groups       map[string]perm // by group name, not retry topic
}

// New validates cfg as RocketMQ's checkPlainAccessConfig and more (every pattern and perm must
// parse) and compiles it. Errors name the account and the field, never a secret.
func New(cfg *Config) (*Checker, error) {
	if cfg == nil {
		return nil, errors.New("acl: no config")
	}
	c := &Checker{accounts: make(map[string]*account, len(cfg.Accounts)), cfg: CloneConfig(cfg)}
	for i, s := range cfg.GlobalWhiteRemoteAddresses {
		p, err := compileAddrPattern(s)
		if err != nil {
			return nil, fmt.Errorf("acl: globalWhiteRemoteAddresses[%d] %q: %w", i, s, err)
		}
		if p.kind != patternNever {
			c.global = append(c.global, p)
		}
	}
	first := make(map[string]int, len(cfg.Accounts))
	for i := range cfg.Accounts {
		a, err := compileAccount(&cfg.Accounts[i])
		if err != nil {
			return nil, fmt.Errorf("acl: %s: %w", accountName(i, cfg.Accounts[i].AccessKey), err)
		}
		if j, dup := first[a.accessKey]; dup {
			return nil, fmt.Errorf("acl: %s: accessKey already used by accounts[%d]", accountName(i, a.accessKey), j)
		}
		first[a.accessKey] = i
		c.accounts[a.accessKey] = a
	}
	return c, nil
}

// accountName names an account in errors by its position and AccessKey (which is no secret).
func accountName(i int, accessKey string) string {
	if accessKey == "" {
		return fmt.Sprintf("accounts[%d]", i)
	}
	return fmt.Sprintf("accounts[%d] (accessKey %q)", i, accessKey)
}

func compileAccount(cfg *Account) (*account, error) {
	if utf8.RuneCountInString(cfg.AccessKey) <= accessKeyMinLength {
		return nil, fmt.Errorf("accessKey must be longer than %d characters", accessKeyMinLength)
	}
	if utf8.RuneCountInString(cfg.SecretKey) <= secretKeyMinLength {
		return nil, fmt.Errorf("secretKey must be longer than %d characters", secretKeyMinLength)
	}
	a := &account{
		accessKey: cfg.AccessKey,
		signer:    remoting.NewSigner(remoting.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}),
		macs:      newMACs(cfg.SecretKey),
		admin:     cfg.Admin,
		ownsAll:   cfg.Admin && len(cfg.TopicPerms) == 0 && len(cfg.GroupPerms) == 0,
	}
	var err error
	if a.white, err = compileAddrPattern(cfg.WhiteRemoteAddress); err != nil {
		return nil, fmt.Errorf("whiteRemoteAddress %q: %w", cfg.WhiteRemoteAddress, err)
	}
	var ok bool
	if a.defaultTopic, ok = parseDefaultPerm(cfg.DefaultTopicPerm); !ok {
		return nil, fmt.Errorf("defaultTopicPerm %q: %s", cfg.DefaultTopicPerm, permSpellings)
	}
	if a.defaultGroup, ok = parseDefaultPerm(cfg.DefaultGroupPerm); !ok {
		return nil, fmt.Errorf("defaultGroupPerm %q: %s", cfg.DefaultGroupPerm, permSpellings)
	}
	a.topics = make(map[string]perm, len(cfg.TopicPerms))
	a.groups = make(map[string]perm, len(cfg.GroupPerms))
	for i, item := range cfg.GroupPerms {
		name, p, ok := parseResourcePerm(item)
		if !ok {
			return nil, fmt.Errorf("groupPerms[%d] %q: want group=PERM, PERM %s", i, item, permSpellings)
		}
		a.groups[name] = p
	}
	// RocketMQ keeps topics and groups in one map, groups keyed %RETRY%<group> and topics
	// parsed after them: a retry topic listed in topicPerms is its group's perm.
	for i, item := range cfg.TopicPerms {
		name, p, ok := parseResourcePerm(item)
		if !ok {
			return nil, fmt.Errorf("topicPerms[%d] %q: want topic=PERM, PERM %s", i, item, permSpellings)
		}
		if group, retry := strings.CutPrefix(name, names.RetryPrefix); retry {
			a.groups[group] = p
		} else {
			a.topics[name] = p
		}
	}
	return a, nil
}

const permSpellings = "one of DENY, PUB, SUB, PUB|SUB, SUB|PUB"

// maxInlineNeeds covers every request but a heartbeat without allocating.
const maxInlineNeeds = 4

// Check decides whether the peer at remoteAddr ("ip:port") may make req: nil lets it through,
// otherwise the NO_PERMISSION response to send back. The order is RocketMQ's: a global white
// address; an AccessKey naming an account; the account's white address; its signature; the
// trace topic; admin; each resource's permission. A request's resources are worked out only
// once its signature checked, so an unsigned peer cannot make the broker decode its bodies.
func (c *Checker) Check(remoteAddr string, req *remoting.Command) *remoting.Command {
	class := classify(req.Code)
	if class == classOpen {
		return nil
	}
	peer := lazyPeer{remote: remoteAddr}
	for i := range c.global {
		if c.global[i].match(peer.addr()) {
			return nil
		}
	}
	accessKey, signed := req.ExtFields[remoting.ExtAccessKey]
	if !signed || accessKey == "" {
		return refuse("no AccessKey: the request is not signed")
	}
	a := c.accounts[accessKey]
	if a == nil {
		return refuse("no account AccessKey=" + accessKey)
	}
	if a.white.kind != patternNever && a.white.match(peer.addr()) {
		return nil
	}
	signature, ok := req.ExtFields[remoting.ExtSignature]
	if !ok || signature == "" {
		return refuse("signature check failed for AccessKey=" + accessKey + ": the request has no Signature")
	}
	if !a.signer.Verify(req) {
		return refuse("signature check failed for AccessKey=" + accessKey)
	}
	var inline [maxInlineNeeds]need
	needs, remark := appendNeeds(inline[:0], req)
	if remark != "" {
		return refuse(remark)
	}
	if isTraceSend(needs) {
		return nil
	}
	if class == classAdmin && !a.admin {
		return refuse("AccessKey=" + accessKey + " needs admin for request code " + strconv.Itoa(int(req.Code)))
	}
	if !a.admin {
		if topic, ok := readsOthers(needs); ok {
			return refuseHeld(accessKey, topic)
		}
	}
	if a.ownsAll {
		return nil
	}
	for _, n := range needs {
		if !a.owned(n).allows(n.perm) {
			return a.refuseNeed(n)
		}
	}
	return nil
}

// refuseNeed is the refusal of a request that needs n, which the account does not own.
func (a *account) refuseNeed(n need) *remoting.Command {
	kind := "topic"
	if n.group {
		kind = "group"
	}
	return refuse("AccessKey=" + a.accessKey + " has no " + n.perm.String() + " permission on " + kind + " " + n.name)
}

// SignedByAdmin reports whether req carries a valid signature of an admin account. The
// cluster secret's guard asks it: with ACL on, an admin may make the name-service writes that
// otherwise need the secret's proof. White addresses do not count: they skip signing, and say
// nothing about who sent the request.
func (c *Checker) SignedByAdmin(req *remoting.Command) bool {
	a := c.accounts[req.ExtFields[remoting.ExtAccessKey]]
	if a == nil || !a.admin || req.ExtFields[remoting.ExtSignature] == "" {
		return false
	}
	return a.signer.Verify(req)
}

// owned is the account's perm on n's resource: the one listed, else the default.
func (a *account) owned(n need) perm {
	if n.group {
		if p, ok := a.groups[n.name]; ok {
			return p
		}
		return a.defaultGroup
	}
	if p, ok := a.topics[n.name]; ok {
		return p
	}
	return a.defaultTopic
}

func refuse(remark string) *remoting.Command {
	return remoting.NewResponse(remoting.NoPermission, remark)
}

// lazyPeer parses the peer's address the first time a white pattern needs it: most requests
// meet none.
type lazyPeer struct {
	remote string
	parsed bool
	a      netip.Addr
	ok     bool
}

func (p *lazyPeer) addr() (netip.Addr, bool) {
	if !p.parsed {
		p.a, p.ok = peerAddr(p.remote)
		p.parsed = true
	}
	return p.a, p.ok
}

// Guard holds the Checker in effect, swapped whole when the configuration changes. Its zero
// value (no Checker) lets every request through: ACL off.
type Guard struct {
	checker atomic.Pointer[Checker]
	refused atomic.Uint64
	// version counts the configurations put in effect (admin.go).
	version versionState
}

// Refused is how many requests the guard has refused.
func (g *Guard) Refused() uint64 { return g.refused.Load() }

// Store puts c in effect for every request checked from now on; nil turns ACL off. A
// configuration other than the one in effect counts a new version (Version).
func (g *Guard) Store(c *Checker) {
	g.version.mu.Lock()
	defer g.version.mu.Unlock()
	if old := g.checker.Load(); old == nil || c == nil || !sameConfig(&old.cfg, &c.cfg) {
		g.version.counter++
		g.version.at = time.Now()
	}
	g.checker.Store(c)
}

// SignedByAdmin is Checker.SignedByAdmin with the Checker in effect; false when ACL is off.
func (g *Guard) SignedByAdmin(req *remoting.Command) bool {
	c := g.checker.Load()
	return c != nil && c.SignedByAdmin(req)
}

// Check is Checker.Check with the Checker in effect and the channel's peer address; its method
// value is a remoting.Guard.
func (g *Guard) Check(ch remoting.Channel, req *remoting.Command) *remoting.Command {
	c := g.checker.Load()
	if c == nil {
		return nil
	}
	resp := c.Check(ch.RemoteAddr(), req)
	if resp != nil {
		g.refused.Add(1)
	}
	return resp
}
