package acl

import "strings"

// perm is a set of RocketMQ's permission bits (Permission.java); the values match Java's.
type perm uint8

const (
	permDeny perm = 1
	permPub  perm = 1 << 2
	permSub  perm = 1 << 3
)

// allows is Permission.checkPermission: DENY wins over anything, else one needed bit must be
// owned.
func (owned perm) allows(needed perm) bool {
	return owned&permDeny == 0 && owned&needed != 0
}

func (p perm) String() string {
	switch p {
	case permPub:
		return "PUB"
	case permSub:
		return "SUB"
	case permPub | permSub:
		return "PUB|SUB"
	}
	return "DENY"
}

// parsePerm reads a perm string. RocketMQ reads any unknown spelling as DENY without a word;
// here it is an error, so that a typo cannot silently lock an account out.
func parsePerm(s string) (perm, bool) {
	switch strings.TrimSpace(s) {
	case "DENY":
		return permDeny, true
	case "PUB":
		return permPub, true
	case "SUB":
		return permSub, true
	case "PUB|SUB", "SUB|PUB":
		return permPub | permSub, true
	}
	return 0, false
}

// parseDefaultPerm is parsePerm where empty (the key left out) means DENY, as in RocketMQ.
func parseDefaultPerm(s string) (perm, bool) {
	if strings.TrimSpace(s) == "" {
		return permDeny, true
	}
	return parsePerm(s)
}

// parseResourcePerm splits "name=PERM" (Permission.parseResourcePerms): exactly one "=", both
// sides trimmed and non-empty.
func parseResourcePerm(item string) (name string, p perm, ok bool) {
	name, ps, found := strings.Cut(item, "=")
	name = strings.TrimSpace(name)
	if !found || name == "" || strings.Contains(ps, "=") {
		return "", 0, false
	}
	p, ok = parsePerm(ps)
	return name, p, ok
}
