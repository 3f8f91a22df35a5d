package replication

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"time"
)

// Handshake sizes; part of the format, do not change (doc.go draws the exchange).
const (
	// nonceBytes is the size of each side's random challenge.
	nonceBytes = 32
	// proofBytes is the size of an HMAC-SHA256 proof.
	proofBytes = sha256.Size
)

// Proof labels: each side's proof covers its role, so a master's proof can never be
// replayed as a slave's answer (or the reverse). Part of the format.
const (
	slaveProofLabel  = "mq-ha-slave-v1"
	masterProofLabel = "mq-ha-master-v1"
)

// proof is HMAC-SHA256(secret, label | masterNonce | slaveNonce).
func proof(secret []byte, label string, masterNonce, slaveNonce []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	h.Write(masterNonce)
	h.Write(slaveNonce)
	return h.Sum(nil)
}

// masterHandshake is the master's side of the shared-secret handshake: it sends a nonce,
// checks the peer's proof in constant time and proves itself in turn. The whole exchange
// must finish within timeout, so a peer that trickles bytes holds the connection no longer.
// Nothing else is written to a peer before this returns nil.
func masterHandshake(c net.Conn, secret []byte, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var masterNonce [nonceBytes]byte
	rand.Read(masterNonce[:])
	if _, err := c.Write(masterNonce[:]); err != nil {
		return fmt.Errorf("%w: send challenge: %w", ErrAuth, err)
	}
	var answer [nonceBytes + proofBytes]byte
	if _, err := io.ReadFull(c, answer[:]); err != nil {
		return fmt.Errorf("%w: no answer to the challenge: %w", ErrAuth, err)
	}
	slaveNonce := answer[:nonceBytes]
	want := proof(secret, slaveProofLabel, masterNonce[:], slaveNonce)
	if !hmac.Equal(want, answer[nonceBytes:]) {
		return fmt.Errorf("%w: wrong proof (the peer does not know the HA secret)", ErrAuth)
	}
	if _, err := c.Write(proof(secret, masterProofLabel, masterNonce[:], slaveNonce)); err != nil {
		return fmt.Errorf("%w: send proof: %w", ErrAuth, err)
	}
	return c.SetDeadline(time.Time{})
}

// slaveHandshake is the slave's side: it answers the master's nonce with its own nonce and
// proof, then checks the master's proof, so a slave never appends blocks from a master that
// does not know the secret either.
func slaveHandshake(c net.Conn, secret []byte, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var masterNonce [nonceBytes]byte
	if _, err := io.ReadFull(c, masterNonce[:]); err != nil {
		return fmt.Errorf("%w: no challenge from the master (has it an HA secret?): %w", ErrAuth, err)
	}
	answer := make([]byte, nonceBytes, nonceBytes+proofBytes)
	rand.Read(answer)
	answer = append(answer, proof(secret, slaveProofLabel, masterNonce[:], answer)...)
	if _, err := c.Write(answer); err != nil {
		return fmt.Errorf("%w: send proof: %w", ErrAuth, err)
	}
	var got [proofBytes]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("%w: no proof from the master (wrong HA secret?): %w", ErrAuth, err)
	}
	if !hmac.Equal(proof(secret, masterProofLabel, masterNonce[:], answer[:nonceBytes]), got[:]) {
		return fmt.Errorf("%w: wrong proof from the master (it does not know the HA secret)", ErrAuth)
	}
	return c.SetDeadline(time.Time{})
}
