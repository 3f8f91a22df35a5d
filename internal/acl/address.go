package acl

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// patternKind is the shape of a white address pattern, as RocketMQ's
// RemoteAddressStrategyFactory tells them apart.
type patternKind uint8

const (
	patternNever patternKind = iota // blank: matches nothing
	patternAll                      // "*", "*.*.*.*", "*:*:*:*:*:*:*:*"
	patternSet                      // one address, "a,b,c", "192.168.1.{1,2,3}"
	patternRange                    // "192.168.1.*", "192.168.*.*", "192.168.1.1-100", "2::ac5:78:1-200"
)

// addrPattern is a compiled whiteRemoteAddress or globalWhiteRemoteAddresses entry.
type addrPattern struct {
	kind  patternKind
	addrs []netip.Addr // patternSet
	// patternRange: the octets (IPv4) or 16-bit groups (IPv6) that must equal prefix, then the
	// next one within lo..hi; any that follow are free.
	v6     bool
	prefix []uint16
	lo, hi uint16
}

// compileAddrPattern parses a white address pattern. It takes what RocketMQ 4.9 takes, and
// refuses what RocketMQ would take but match differently from what it says: the parts after a
// ranged IPv4 octet must be "*" (RocketMQ ignores them, so "192.168.1-5.7" would let in
// 192.168.3.9), the ranged octet cannot be the first one (RocketMQ never matches such a
// pattern), and the items of a list or a {…} set are trimmed of spaces.
func compileAddrPattern(s string) (addrPattern, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return addrPattern{kind: patternNever}, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		return addrPattern{kind: patternAll}, nil
	case strings.HasSuffix(s, "}"):
		return compileBraceSet(s)
	case strings.Contains(s, ","):
		return compileList(strings.Split(s, ","))
	case strings.ContainsAny(s, "*-"):
		if strings.Contains(s, ":") {
			return compileRange6(s)
		}
		return compileRange4(s)
	}
	return compileList([]string{s})
}

// compileBraceSet parses "192.168.1.{1,2,3}" (or an IPv6 prefix and a {…} set of last
// groups): the text before "{" followed by each item.
func compileBraceSet(s string) (addrPattern, error) {
	open := strings.IndexByte(s, '{')
	if open <= 0 || strings.Count(s, "{") != 1 || strings.Count(s, "}") != 1 || (s[open-1] != '.' && s[open-1] != ':') {
		return addrPattern{}, errors.New("a {…} set must end the address, after its last '.' or ':'")
	}
	head := s[:open]
	items := strings.Split(s[open+1:len(s)-1], ",")
	for i, item := range items {
		if item = strings.TrimSpace(item); item != "" {
			items[i] = head + item
		}
	}
	return compileList(items)
}

// compileList parses addresses separated by commas; empty items are skipped as RocketMQ's
// StringUtils.split does.
func compileList(items []string) (addrPattern, error) {
	p := addrPattern{kind: patternSet}
	for _, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		a, err := parsePatternAddr(item)
		if err != nil {
			return addrPattern{}, err
		}
		if !slices.Contains(p.addrs, a) {
			p.addrs = append(p.addrs, a)
		}
	}
	if len(p.addrs) == 0 {
		return addrPattern{}, errors.New("no address")
	}
	return p, nil
}

// parsePatternAddr parses one IPv4 or IPv6 address of a pattern. IPv4-mapped IPv6 addresses
// are their IPv4 address, as the peers' addresses are.
func parsePatternAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, errors.New("not an IPv4 or IPv6 address: " + strconv.Quote(s))
	}
	return a.Unmap(), nil
}

// compileRange4 parses an IPv4 pattern with a wildcard or a range: "a.b.c.*", "a.b.*.*",
// "a.*.*.*", "a.b.c.x-y", "a.b.x-y.*", "a.x-y.*.*".
func compileRange4(s string) (addrPattern, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return addrPattern{}, errors.New("an IPv4 pattern has four parts")
	}
	p := addrPattern{kind: patternRange}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		switch {
		case i > len(p.prefix):
			if part != "*" {
				return addrPattern{}, errors.New("the parts after a '*' or a range must be '*'")
			}
		case part == "*" || strings.Contains(part, "-"):
			if i == 0 {
				return addrPattern{}, errors.New("the first part cannot be a '*' or a range")
			}
			lo, hi, err := parseBounds(part, 10, 255)
			if err != nil {
				return addrPattern{}, err
			}
			p.lo, p.hi = lo, hi
		default:
			n, err := parseNumber(part, 10, 255)
			if err != nil {
				return addrPattern{}, err
			}
			p.prefix = append(p.prefix, n)
		}
	}
	if len(p.prefix) == 4 {
		return addrPattern{}, errors.New("no '*' or range")
	}
	return p, nil
}

// compileRange6 parses an IPv6 pattern with a wildcard or a range, as RocketMQ's
// RangeRemoteAddressStrategy: "prefix:*", "prefix:x-y" or "prefix:x-y:*" (hex bounds). A
// prefix with "::" is expanded so that the range is the last group ("x-y") or the one before
// it ("x-y:*"); a prefix without one is matched as written and the groups after the range are
// free ("2:3:*" is 2:3:<any>:…).
func compileRange6(s string) (addrPattern, error) {
	star := strings.IndexByte(s, '*')
	dash := strings.IndexByte(s, '-')
	if star >= 0 && star != len(s)-1 {
		return addrPattern{}, errors.New("'*' may only end an IPv6 pattern")
	}
	if strings.Count(s, "-") > 1 {
		return addrPattern{}, errors.New("one range at most")
	}
	rest := s
	groups := 7 // the ranged group is the eighth
	if star >= 0 && dash >= 0 {
		if !strings.HasSuffix(s, ":*") {
			return addrPattern{}, errors.New("'*' must be a whole group")
		}
		rest = s[:len(s)-2]
		groups = 6
	}
	last := strings.LastIndexByte(rest, ':')
	if last < 0 {
		return addrPattern{}, errors.New("no ':' before the range")
	}
	head, ranged := rest[:last], rest[last+1:]
	if strings.HasSuffix(head, ":") {
		head += ":" // "fe80::*": the "::" ends the prefix
	}
	lo, hi, err := parseBounds(ranged, 16, 0xffff)
	if err != nil {
		return addrPattern{}, err
	}
	prefix, err := parseGroups6(head, groups)
	if err != nil {
		return addrPattern{}, err
	}
	return addrPattern{kind: patternRange, v6: true, prefix: prefix, lo: lo, hi: hi}, nil
}

// parseGroups6 parses the hex groups of an IPv6 prefix; "::" expands to as many zero groups as
// make want in all.
func parseGroups6(head string, want int) ([]uint16, error) {
	left, right, compressed := strings.Cut(head, "::")
	if compressed && strings.Contains(right, "::") {
		return nil, errors.New("'::' twice")
	}
	l, err := splitGroups6(left)
	if err != nil {
		return nil, err
	}
	if !compressed {
		if len(l) == 0 || len(l) > want {
			return nil, errors.New("an IPv6 pattern has at most eight groups")
		}
		return l, nil
	}
	r, err := splitGroups6(right)
	if err != nil {
		return nil, err
	}
	if len(l)+len(r) >= want {
		return nil, errors.New("an IPv6 pattern has at most eight groups")
	}
	out := make([]uint16, want)
	copy(out, l)
	copy(out[want-len(r):], r)
	return out, nil
}

func splitGroups6(s string) ([]uint16, error) {
	if s == "" {
		return nil, nil
	}
	var out []uint16
	for g := range strings.SplitSeq(s, ":") {
		n, err := parseNumber(g, 16, 0xffff)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// parseBounds parses "*" (every value) or "lo-hi".
func parseBounds(s string, base int, maxVal uint16) (lo, hi uint16, err error) {
	if s == "*" {
		return 0, maxVal, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, errors.New("bad range " + strconv.Quote(s))
	}
	if lo, err = parseNumber(a, base, maxVal); err != nil {
		return 0, 0, err
	}
	if hi, err = parseNumber(b, base, maxVal); err != nil {
		return 0, 0, err
	}
	if lo > hi {
		return 0, 0, errors.New("range " + strconv.Quote(s) + " runs backwards")
	}
	return lo, hi, nil
}

// parseNumber parses one IPv4 octet (base 10, no leading zero, as the addresses peers have)
// or one IPv6 group (base 16, 1 to 4 digits).
func parseNumber(s string, base int, maxVal uint16) (uint16, error) {
	s = strings.TrimSpace(s)
	bad := s == "" || (base == 10 && len(s) > 1 && s[0] == '0') || (base == 16 && len(s) > 4)
	for i := 0; i < len(s) && !bad; i++ {
		c := s[i] | 0x20
		bad = !('0' <= s[i] && s[i] <= '9') && !(base == 16 && 'a' <= c && c <= 'f')
	}
	if bad {
		return 0, errors.New("bad number " + strconv.Quote(s))
	}
	n, err := strconv.ParseUint(s, base, 32)
	if err != nil || n > uint64(maxVal) {
		return 0, errors.New("number out of range " + strconv.Quote(s))
	}
	return uint16(n), nil
}

// match reports whether the peer at a (ok false: an address that is not an IP, such as an
// in-process client's) is let in. Only "*" lets in a peer without an IP, as in RocketMQ.
func (p *addrPattern) match(a netip.Addr, ok bool) bool {
	switch p.kind {
	case patternAll:
		return true
	case patternNever:
		return false
	}
	if !ok {
		return false
	}
	if p.kind == patternSet {
		return slices.Contains(p.addrs, a)
	}
	var units [8]uint16
	n := 4
	if p.v6 {
		if !a.Is6() {
			return false
		}
		b := a.As16()
		for i := range units {
			units[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
		n = 8
	} else {
		if !a.Is4() {
			return false
		}
		b := a.As4()
		for i, o := range b {
			units[i] = uint16(o)
		}
	}
	k := len(p.prefix)
	if k >= n || !slices.Equal(units[:k], p.prefix) {
		return false
	}
	return p.lo <= units[k] && units[k] <= p.hi
}

// peerAddr parses a channel's remote address, "ip:port" or "[ipv6]:port" (a bare IP is taken
// too), into the IP white patterns are matched against: IPv4-mapped IPv6 addresses are IPv4,
// zones dropped.
func peerAddr(remote string) (netip.Addr, bool) {
	host := remote
	if strings.HasPrefix(remote, "[") {
		end := strings.IndexByte(remote, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host = remote[1:end]
	} else if i := strings.LastIndexByte(remote, ':'); i >= 0 && strings.IndexByte(remote, ':') == i {
		host = remote[:i]
	}
	if !plausibleIP(host) {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// plausibleIP screens out what cannot be an IP before netip.ParseAddr, whose error would
// allocate on every request of a peer with a made-up address.
func plausibleIP(s string) bool {
	if s == "" {
		return false
	}
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i] // zone: anything
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !('0' <= s[i] && s[i] <= '9') && !('a' <= c && c <= 'f') && s[i] != '.' && s[i] != ':' {
			return false
		}
	}
	return true
}
