package mqtest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
)

// A test of a service that publishes events: start a cluster, point the service (here a
// producer standing in for it) at NameServerAddrs, consume and wait with Eventually. In a real
// test t is the *testing.T of the test function; exampleT stands in for it here.
func Example() {
	t, done := exampleT()
	defer done()

	c := mqtest.StartCluster(t, mqtest.Config{BrokerGroups: 2})
	c.CreateTopic("Orders", 4)

	// The service under test would be built with c.NameServerAddrs().
	p := c.NewProducer(producer.WithNameServers(c.NameServerAddrs()...))
	if _, err := p.SendSync(context.Background(), producer.NewMessage("Orders", []byte("order o-1 placed"))); err != nil {
		t.Fatal(err)
	}

	got := make(chan string, 1)
	cons := c.NewPushConsumer(consumer.WithGroup("billing"))
	cons.Subscribe("Orders", "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			select {
			case got <- string(m.Body):
			default:
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(<-got)
	// Output: order o-1 placed
}

// exampleTB is just enough of a testing.TB for an Example function, which has none.
type exampleTB struct {
	testing.TB // nil: only the methods below are called
	cleanups   []func()
}

func exampleT() (*exampleTB, func()) {
	t := &exampleTB{}
	return t, func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
	}
}

func (t *exampleTB) Helper()                   {}
func (t *exampleTB) Cleanup(f func())          { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) Log(args ...any)           {}
func (t *exampleTB) Logf(string, ...any)       {}
func (t *exampleTB) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (t *exampleTB) Fatal(a ...any)            { panic(fmt.Sprint(a...)) }
func (t *exampleTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (t *exampleTB) TempDir() string {
	d, err := os.MkdirTemp("", "mqtest-example-")
	if err != nil {
		panic(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
