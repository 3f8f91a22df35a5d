package mq_test

import (
	"os"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/rs/zerolog"
)

// BenchmarkNodeStart starts a node on an empty store (one listener, as the bench's node-start
// case does) and closes it; ns/op is start and close together, start-ns/op StartNode alone.
func BenchmarkNodeStart(b *testing.B) {
	nop := zerolog.Nop()
	parent := b.TempDir()
	b.ReportAllocs()
	var start int64
	for b.Loop() {
		dir, err := os.MkdirTemp(parent, "start")
		if err != nil {
			b.Fatal(err)
		}
		t := time.Now()
		n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Store: config.Store{Dir: dir}, Logger: &nop})
		if err != nil {
			b.Fatal(err)
		}
		start += int64(time.Since(t))
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(dir)
	}
	b.ReportMetric(float64(start)/float64(b.N), "start-ns/op")
}
