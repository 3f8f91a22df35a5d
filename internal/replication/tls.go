package replication

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// tlsHandshake completes c's TLS handshake within timeout.
func tlsHandshake(c *tls.Conn, timeout time.Duration) (*tls.Conn, error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := c.Handshake(); err != nil {
		return nil, fmt.Errorf("replication: TLS handshake with %s: %w", c.RemoteAddr(), err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// clientTLSConfig is cfg naming addr's host as the server when cfg names none.
func clientTLSConfig(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" || cfg.InsecureSkipVerify {
		return cfg
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.ServerName = host
	return cfg
}
