package storage_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"os"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/storage"
)

func Example() {
	dir, _ := os.MkdirTemp("", "store")
	defer os.RemoveAll(dir)
	// The dispatcher indexes appends in the background; OnDispatch tells when (it must not
	// block, hence the buffer).
	dispatched := make(chan storage.DispatchEvent, 3)
	st, err := storage.Open(storage.Options{Dir: dir, SegmentBytes: 1 << 20, ConsumeQueueUnits: 1000,
		MaxHashSlotNum: 100, MaxIndexNum: 1000, OnDispatch: func(e storage.DispatchEvent) { dispatched <- e }})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- st.Run(ctx) }()

	host := netip.MustParseAddrPort("127.0.0.1:10911")
	for _, tag := range []string{"TagA", "TagB", "TagA"} {
		res, err := st.PutMessage(&storage.Message{
			Topic: "TopicTest", QueueID: 0, Body: []byte("hello " + tag),
			Properties: message.MarshalProperties(map[string]string{message.PropertyTags: tag}),
			BornHost:   host, StoreHost: host,
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Status, res.QueueOffset, res.MsgID())
	}
	// Wait until the dispatcher has indexed what was appended.
	for range 3 {
		<-dispatched
	}
	got := st.GetMessage("group", "TopicTest", 0, 0, 32, 0, nil)
	fmt.Println(got.Status, len(got.Messages), "messages, next offset", got.NextBeginOffset)
	got.Release()

	cancel()
	<-done
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// PUT_OK 0 7F00000100002A9F0000000000000000
	// PUT_OK 1 7F00000100002A9F0000000000000078
	// PUT_OK 2 7F00000100002A9F00000000000000F0
	// FOUND 3 messages, next offset 3
}
