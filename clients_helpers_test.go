package mq_test

import (
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/producer"
)

// kindProducer is a producer of n made with opts, reaching it in process ("inproc", through the
// node's own transport) or over TCP ("tcp", by its name server address); closed at cleanup.
func kindProducer(t *testing.T, n *mq.Node, kind string, opts ...producer.Option) *producer.Producer {
	t.Helper()
	var p *producer.Producer
	var err error
	if kind == "inproc" {
		p, err = n.NewProducer(opts...)
	} else {
		p, err = producer.New(append(opts, producer.WithNameServers(n.Addr()))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
