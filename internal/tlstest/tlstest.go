// Package tlstest makes a throwaway certificate authority and a server certificate for
// 127.0.0.1, ::1 and localhost, so that tests can run TLS servers and clients that verify each
// other without files in the repository.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certs is a CA and one server certificate it signed.
type Certs struct {
	// CertPEM and KeyPEM are the server's certificate and private key, PEM encoded.
	CertPEM, KeyPEM []byte
	// CAPEM is the CA's certificate, PEM encoded.
	CAPEM []byte

	serverCert tls.Certificate
	roots      *x509.CertPool
}

// New makes a CA and a server certificate valid for an hour.
func New() (*Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mq test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &Certs{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		CAPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		roots:   x509.NewCertPool(),
	}
	c.roots.AddCert(ca)
	if c.serverCert, err = tls.X509KeyPair(c.CertPEM, c.KeyPEM); err != nil {
		return nil, err
	}
	return c, nil
}

// Server is a server config presenting the certificate.
func (c *Certs) Server() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.serverCert}, MinVersion: tls.VersionTLS12}
}

// Client is a client config that trusts the CA and nothing else.
func (c *Certs) Client() *tls.Config {
	return &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
}

// WriteFiles writes the certificate and key into dir as PEM files and returns their paths.
func (c *Certs) WriteFiles(dir string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, c.CertPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("tlstest: %w", err)
	}
	if err := os.WriteFile(keyFile, c.KeyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("tlstest: %w", err)
	}
	return certFile, keyFile, nil
}
