package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// The mqnode binary on a small file system: the file-size flags shape the files it writes,
// and the disk flags make it refuse sends once the disk is nearly full (SERVICE_NOT_AVAILABLE,
// the broker's disk is full) and accept them once space is freed.
func TestBinaryDiskFlagsAndFullDisk(t *testing.T) {
	t.Parallel() // child processes that mostly wait: side by side with the other binary tests
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	mountErr := errors.New("mounting a tmpfs needs root")
	if os.Geteuid() == 0 {
		mountErr = syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", 16<<20))
	}
	if mountErr != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("needs a small file system: %v (set CI to make this a failure)", mountErr)
		}
		t.Fatal(mountErr)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := buildMqnode(t)
	store := filepath.Join(dir, "store")
	node := startMqnode(t, bin, "-listen", "127.0.0.1:0", "-store", store,
		"-segment-bytes", "1048576", "-consume-queue-file-bytes", "40000",
		"-max-hash-slot-num", "10000", "-max-index-num", "40000",
		"-disk-max-used-space-ratio", "100", "-disk-space-clean-forcibly-ratio", "100",
		"-clean-resource-interval", "50ms")
	p, err := producer.New(producer.WithNameServers(node.namesrv), producer.WithGroup("disk-pg"), producer.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const topic = "DiskFlagsTopic"
	body := []byte(strings.Repeat("x", 1000))
	var refusal *remoting.ResponseError
	sent := 0
	for range 50_000 {
		_, err := p.SendSync(ctx, producer.NewMessage(topic, body))
		if err == nil {
			sent++
			continue
		}
		var re *remoting.ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("send %d: %v", sent, err)
		}
		if re.Code == remoting.ServiceNotAvailable {
			refusal = re
			break
		}
		if re.Code != remoting.SystemError { // a burst that filled the disk before the next measure
			t.Fatalf("send %d: %v", sent, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refusal == nil || !strings.Contains(refusal.Remark, "the broker's disk is full [CL:  0.9") {
		t.Fatalf("after %d sends: refusal %v", sent, refusal)
	}
	// The files have the sizes the flags gave.
	if fi, err := os.Stat(filepath.Join(store, "commitlog", "00000000000000000000")); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("commitlog segment: %v %v", fi, err)
	}
	cqs, _ := filepath.Glob(filepath.Join(store, "consumequeue", topic, "*", "00000000000000000000"))
	if len(cqs) == 0 {
		t.Fatal("no ConsumeQueue file")
	}
	for _, f := range cqs {
		if fi, err := os.Stat(f); err != nil || fi.Size() != 40000 {
			t.Fatalf("ConsumeQueue file %s: %v %v", f, fi, err)
		}
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := p.SendSync(ctx, producer.NewMessage(topic, body))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sends still refused 30 s after space was freed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
