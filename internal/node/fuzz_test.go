package node

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// FuzzNodeRequest drives the request handlers of a whole node (name service and broker on one
// dispatcher) with hostile requests, beyond the frame decoder. Each input is one request: a code
// among those the node serves, extFields starting from a valid header of that code with up to
// four fields set (to a fuzz string or a fuzz number in decimal), deleted, or added under random
// keys, a body (the code's valid body, one built from fuzz values, or raw fuzz bytes), a JSON or
// binary header, sent in-process or as a frame on a raw TCP connection (which also exercises
// frame encoding); optionally followed by a read of the names it carried.
//
// After every input: no processor panicked and the node logged nothing at error level; nothing
// appeared outside the store directory; every two-way request was answered within the answer
// timeout by a frame no larger than the frame limit; listings decode with our own decoders; a
// topic the node said it created is listed under its exact name; the CommitLog was dispatched
// and delayed messages delivered. An honest send is stored and dispatched and the name service
// answers after every input when replaying the seeds, after every fzHonestEvery when fuzzing.
//
// A pull with the suspend bit and a suspend time above fzParkThreshold may go unanswered (a
// parked long poll): after the park wait the harness closes its connection, which drops the
// pull, and goes on with a new one. One-way requests are not sent: nothing tells when they are
// done, so a panic could not be pinned on its input.
//
// The node lives as long as the worker process and keeps the state earlier inputs left, which
// finds bugs that need a setup (a topic created with 2^31-1 queues, then its stats read); a
// saved crasher may therefore need the inputs before it. The follow-up read puts the common
// two-step cases into one input, so that they reproduce alone.
func FuzzNodeRequest(f *testing.F) {
	f.Cleanup(closeFuzzEnv)
	for _, s := range fuzzSeeds() {
		a, b, c, d := s.fields[0], s.fields[1], s.fields[2], s.fields[3]
		f.Add(s.code, slices.Clone(s.ctrl[:]), a.key, a.val, a.num, b.key, b.val, b.num, c.key, c.val, c.num,
			d.key, d.val, d.num, s.body)
	}
	f.Fuzz(func(t *testing.T, code int32, ctrl []byte,
		k1, v1 string, n1 int64, k2, v2 string, n2 int64,
		k3, v3 string, n3 int64, k4, v4 string, n4 int64, body []byte) {
		e := sharedFuzzEnv(t)
		err := e.run(fuzzInput{code: code, ctrl: ctrl, body: body, fields: [4]fuzzField{
			{k1, v1, n1}, {k2, v2, n2}, {k3, v3, n3}, {k4, v4, n4}}})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestFuzzHarnessCatches plants each kind of bug FuzzNodeRequest looks for in a node of its own
// and checks that the harness reports it, and that it lets a parked long poll go.
func TestFuzzHarnessCatches(t *testing.T) {
	e, err := startFuzzEnv(fuzzEnvConfig{answerTimeout: 2 * time.Second, parkWait: 50 * time.Millisecond,
		honestEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	d := e.node.servers[0].d
	ex := remoting.NewExecutor("planted", 1, 16)
	plant := func(code int32, f remoting.ProcessorFunc) {
		d.Register(code, f, ex)
		if !e.served[code] {
			e.served[code] = true
			e.codes = append(e.codes, code)
		}
	}
	silent := make(chan struct{})
	cases := []struct {
		name  string
		code  int32
		plant remoting.ProcessorFunc
		want  string // in the error; "" for none
	}{{
		name: "panic", code: 30001,
		plant: func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			panic("planted")
		},
		want: "a processor panicked",
	}, {
		name: "error log", code: 30002,
		plant: func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			e.log.Error().Msg("planted")
			return remoting.NewResponse(remoting.Success, ""), nil
		},
		want: "logged an error",
	}, {
		name: "file outside the store", code: 30003,
		plant: func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			return remoting.NewResponse(remoting.Success, ""),
				os.Mkdir(filepath.Join(filepath.Dir(e.expected[len(e.expected)-1]), "x"), 0o755)
		},
		want: "created outside the store",
	}, {
		name: "no answer", code: 30004,
		plant: func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			close(silent)
			return nil, nil
		},
		want: "no answer",
	}, {
		name: "frame above the limit", code: 30005,
		plant: func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(remoting.Success, "")
			resp.Body = make([]byte, e.maxFrame)
			return resp, nil
		},
		want: "above the",
	}, {
		name: "long poll parked", code: remoting.PullMessage,
		want: "",
	}, {
		name: "listing that does not decode", code: remoting.GetAllTopicConfig,
		plant: func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(remoting.Success, "")
			resp.Body = []byte(`{"topicConfigTable":`)
			return resp, nil
		},
		want: "does not decode",
	}, {
		name: "honest send refused", code: remoting.GetBrokerClusterInfo,
		plant: nil, // SEND_MESSAGE_V2 is replaced below: last, since it breaks the node for good
		want:  "an honest client is refused",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := fuzzInput{code: c.code}
			parked := e.parked
			switch {
			case c.name == "no answer":
				plant(c.code, c.plant)
				e.cfg.answerTimeout = 100 * time.Millisecond
				defer func() {
					select {
					case <-silent:
						e.wedged = false // the processor returned: nothing is stuck
					case <-time.After(10 * time.Second):
						t.Error("the planted processor never ran")
					}
					e.cfg.answerTimeout = 2 * time.Second
				}()
			case c.plant != nil:
				plant(c.code, c.plant)
			case c.code == remoting.PullMessage:
				// 20 s, as RocketMQ clients suspend, on a queue without messages.
				s := seed(c.code).setNum(0, "sysFlag", int64(protocol.BuildPullSysFlag(false, true, true, false))).
					setNum(1, "suspendTimeoutMillis", 20000).setNum(2, "queueId", 3)
				in = fuzzInput{code: s.code, ctrl: s.ctrl[:], fields: s.fields}
			default:
				plant(remoting.SendMessageV2, func(context.Context, remoting.Channel, *remoting.Command) (
					*remoting.Command, error) {
					return remoting.NewResponse(remoting.SystemBusy, "planted"), nil
				})
			}
			err := e.run(in)
			if c.code == remoting.PullMessage && e.parked != parked+1 {
				t.Fatalf("the pull was answered, not parked (error %v)", err)
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("harness reported %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("harness reported %v, want an error with %q", err, c.want)
			}
			if strays, err := e.strays(); err != nil || len(strays) > 0 {
				t.Fatalf("left behind %v (%v)", strays, err)
			}
		})
	}
}

// Harness limits of the shared node. The answer timeout is generous because the machine running
// make test may be busy; an answered request costs microseconds, so only a failing input waits.
const (
	fzAnswerTimeout = 10 * time.Second
	fzParkWait      = 300 * time.Millisecond
	fzParkThreshold = 100 // ms: pulls suspending longer may be parked
	fzHonestEvery   = 16
	fzChainDepth    = 16      // directories between the sentinel and the store
	fzHeapLimit     = 1 << 30 // a worker whose heap passes this is taken down, naming the input
	fzProbeCodes    = 2048    // request codes probed for a processor at start
)

// Names the templates use; the node starts with fzTopic holding one message.
const (
	fzTopic    = "FuzzTopic"
	fzProducer = "FuzzProducer"
	fzConsumer = "FuzzConsumer"
	fzClient   = "127.0.0.1@fuzz"
	fzNS       = "FuzzNS"
	fzBroker   = "FuzzBroker"
	fzCluster  = "FuzzCluster"
)

// The ctrl argument holds one byte per control, so that the fuzzer's byte mutations reach each
// of them (it moves an integer argument by at most 100); a missing byte takes its default.
const (
	ctrlModes  = 0 // ctrl[0..3]: what each field does, a field mode (mod 8); default fzSkip
	ctrlWire   = 4 // bits fzBinary, fzTCP, fzEmptyExt, fzFollowTCP; default 0
	ctrlBody   = 5 // a body mode (mod 4); default fzBodyTemplate
	ctrlFollow = 6 // the follow-up read (mod 8), see followUp; default 0, none
	ctrlLen    = 7
)

// Bits of ctrl[ctrlWire].
const (
	fzBinary    = 1 << iota // binary header instead of JSON
	fzTCP                   // a frame on the raw TCP connection instead of in-process
	fzEmptyExt              // start from no extFields instead of the code's valid header
	fzFollowTCP             // the follow-up read goes over TCP
)

// Field modes: what a field does to the extFields. Modes 6 and 7 skip, like fzSkip.
const (
	fzSet     = iota // key = the field's string
	fzSetNum         // key = its number in decimal
	fzDelete         // key removed
	fzSkip           // nothing
	fzSetInt         // key = fuzzInts[number] in decimal
	fzSetDict        // key = fuzzDict[number] followed by the string
)

// Body modes.
const (
	fzBodyTemplate = iota // the code's valid body
	fzBodyRaw             // the body argument
	fzBodyFuzzed          // the code's body built from the fields' values
	fzBodyNone
)

type fuzzField struct {
	key, val string
	num      int64
}

type fuzzInput struct {
	code   int32
	ctrl   []byte
	fields [4]fuzzField
	body   []byte
}

// at returns control i, or def when the input is shorter.
func (in fuzzInput) at(i int, def byte) byte {
	if i < len(in.ctrl) {
		return in.ctrl[i]
	}
	return def
}

// str is the string field i gives the body builders: its dictionary entry and string in mode
// fzSetDict, its string otherwise.
func (in fuzzInput) str(i int) string {
	f := in.fields[i]
	if in.at(ctrlModes+i, fzSkip)%8 == fzSetDict {
		return fuzzDict[pick(f.num, len(fuzzDict))] + f.val
	}
	return f.val
}

func pick(n int64, size int) int { return int(uint64(n) % uint64(size)) }

// fuzzVals feeds fuzz strings and numbers to the body builders; a nil *fuzzVals gives every
// default, which builds the valid body. An empty string also gives the default, so that a body
// built from a few values is otherwise valid and reaches deep into its handler (raw bodies
// cover empty names).
type fuzzVals struct {
	strs []string
	nums []int64
}

func (v *fuzzVals) s(i int, def string) string {
	if v == nil || v.strs[i%len(v.strs)] == "" {
		return def
	}
	return v.strs[i%len(v.strs)]
}

func (v *fuzzVals) n(i int, def int64) int64 {
	if v == nil {
		return def
	}
	return v.nums[i%len(v.nums)]
}

// fuzzTemplate is a valid request of one code.
type fuzzTemplate struct {
	ext  map[string]string
	body func(v *fuzzVals) []byte // nil: no body
}

type fuzzEnvConfig struct {
	answerTimeout time.Duration // a two-way request unanswered this long is a failure
	parkWait      time.Duration // how long a pull that may be parked is given
	honestEvery   int           // inputs per honest check
}

// fuzzEnv is a node under fuzzing and what the harness knows about it. Its methods are called
// from one goroutine at a time.
type fuzzEnv struct {
	cfg      fuzzEnvConfig
	node     *Node
	log      zerolog.Logger
	addr     string
	sentinel string
	expected []string // sentinel/d01, …, sentinel/d01/…/d16, …/store: each holds only the next
	tr       *remoting.InProcTransport
	maxFrame int

	codes     []int32 // the codes the node serves, sorted
	served    map[int32]bool
	templates map[int32]fuzzTemplate
	keys      map[int32][]string // sorted header keys per code
	allKeys   []string
	honest    string // a topic no input can name
	msgOffset int64  // CommitLog offset of fzTopic's first message
	msgID     string

	logs   *fuzzLog
	conn   net.Conn // raw TCP connection, reopened after an error
	rbuf   []byte
	chunk  []byte
	inputs int
	parked int  // pulls left parked
	wedged bool // a request went unanswered: Close could wait for it forever

	current   atomic.Pointer[string] // the input being served, for the heap watchdog
	stopWatch chan struct{}
	watchDone sync.WaitGroup
}

var fuzzEnvState struct {
	sync.Mutex
	env *fuzzEnv
}

// sharedFuzzEnv returns this process's node, starting it on first use: a fuzz worker starts one,
// the coordinator none.
func sharedFuzzEnv(t *testing.T) *fuzzEnv {
	t.Helper()
	fuzzEnvState.Lock()
	defer fuzzEnvState.Unlock()
	if fuzzEnvState.env == nil {
		cfg := fuzzEnvConfig{answerTimeout: fzAnswerTimeout, parkWait: fzParkWait, honestEvery: 1}
		if fuzzing() {
			cfg.honestEvery = fzHonestEvery
		}
		e, err := startFuzzEnv(cfg)
		if err != nil {
			t.Fatalf("start fuzz node: %v", err)
		}
		fuzzEnvState.env = e
	}
	return fuzzEnvState.env
}

func closeFuzzEnv() {
	fuzzEnvState.Lock()
	e := fuzzEnvState.env
	fuzzEnvState.env = nil
	fuzzEnvState.Unlock()
	if e != nil {
		e.close()
	}
}

// fuzzing reports whether this process is a fuzz worker (go test -fuzz) rather than replaying
// the seed corpus.
func fuzzing() bool {
	fl := flag.Lookup("test.fuzzworker")
	return fl != nil && fl.Value.String() == "true"
}

// startFuzzEnv starts a node whose store lies fzChainDepth directories below a fresh sentinel
// directory, so that a name climbing out of the store lands where checkStrays looks.
func startFuzzEnv(cfg fuzzEnvConfig) (*fuzzEnv, error) {
	sweepStaleFuzzDirs()
	sentinel, err := os.MkdirTemp("", fmt.Sprintf("mq-fuzz-node-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	e := &fuzzEnv{cfg: cfg, sentinel: sentinel, logs: &fuzzLog{}, stopWatch: make(chan struct{}),
		chunk: make([]byte, 64<<10)}
	dir := sentinel
	for i := 1; i <= fzChainDepth; i++ {
		dir = filepath.Join(dir, fmt.Sprintf("d%02d", i))
		e.expected = append(e.expected, dir)
	}
	store := filepath.Join(dir, "store")
	e.expected = append(e.expected, store)
	if err := os.MkdirAll(store, 0o755); err != nil {
		os.RemoveAll(sentinel)
		return nil, err
	}
	e.log = zerolog.New(e.logs).Level(zerolog.WarnLevel).Hook(e.logs)
	levels := make([]time.Duration, 18)
	for i := range levels {
		// Delayed messages come due within the input that stored them (see settle).
		levels[i] = time.Duration(i+1) * time.Millisecond
	}
	e.node, err = start(Options{Options: config.Options{
		Listen: "127.0.0.1:0",
		Logger: &e.log,
		Store:  config.Store{Dir: store, SegmentBytes: 16 << 20},
		Limits: config.Limits{
			EventLoops: 1,
			// The default, set here because the answers are checked against it (e.maxFrame).
			MaxFrameBytes: remoting.DefaultMaxFrameBytes,
		},
		Timers: config.Timers{DelayLevels: levels},
	}}, func(o *storage.Options) {
		// Every new queue preallocates a ConsumeQueue file, and inputs create thousands.
		o.ConsumeQueueUnits = 1024
		o.MaxHashSlotNum = 1024
		o.MaxIndexNum = 4096
	})
	if err != nil {
		os.RemoveAll(sentinel)
		return nil, err
	}
	e.addr = e.node.Addr()
	e.maxFrame = e.node.opts.Limits.MaxFrameBytes
	e.tr = remoting.NewInProcTransport(lookupLocal, nil, 10*time.Millisecond)
	e.watchDone.Add(1)
	go e.watchHeap()
	if err := e.setup(); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// setup finds the codes the node serves, stores a first message and creates the honest topic.
func (e *fuzzEnv) setup() error {
	e.served = map[int32]bool{}
	for c := int32(0); c < fzProbeCodes; c++ {
		resp, err := e.inproc(remoting.NewRequest(c, nil, nil), e.cfg.answerTimeout)
		if err != nil {
			return fmt.Errorf("probe code %d: %w", c, err)
		}
		if resp.Code != remoting.RequestCodeNotSupported {
			e.codes = append(e.codes, c)
			e.served[c] = true
		}
	}
	if len(e.codes) == 0 {
		return errors.New("the node serves no code")
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: fzProducer, Topic: fzTopic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1,
		Properties: message.MarshalProperties(map[string]string{message.PropertyKeys: "key1",
			message.PropertyTags: "TagA"})}
	resp, err := e.inproc(remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(&h), []byte("first")),
		e.cfg.answerTimeout)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("first send: %s %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	e.msgID = resp.ExtFields["msgId"]
	if _, e.msgOffset, err = message.ParseOffsetMsgID(e.msgID); err != nil {
		return fmt.Errorf("first send's msgId %q: %w", e.msgID, err)
	}
	e.honest = fmt.Sprintf("FuzzHonest_%d_%d", os.Getpid(), time.Now().UnixNano())
	ct := protocol.CreateTopicRequestHeader{Topic: e.honest, DefaultTopic: "defaultTopic", ReadQueueNums: 1,
		WriteQueueNums: 1, Perm: 6, TopicFilterType: route.FilterSingleTag}
	resp, err = e.inproc(remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(&ct), nil),
		e.cfg.answerTimeout)
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("create honest topic: %s %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	e.templates = fuzzTemplates(e.msgOffset, e.msgID)
	e.keys = map[int32][]string{}
	all := map[string]bool{}
	for code, tpl := range e.templates {
		e.keys[code] = slices.Sorted(maps.Keys(tpl.ext))
		for k := range tpl.ext {
			all[k] = true
		}
	}
	e.allKeys = slices.Sorted(maps.Keys(all))
	return nil
}

func (e *fuzzEnv) close() {
	close(e.stopWatch)
	e.watchDone.Wait()
	e.dropTCP()
	if e.wedged {
		// A processor may still be stuck in an input that failed; Close would wait for it.
		fmt.Fprintln(os.Stderr, "fuzz node left running: a request it was serving never ended")
	} else {
		e.tr.Close()
		if err := e.node.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "fuzz node close: %v\n", err)
		}
	}
	os.RemoveAll(e.sentinel)
}

// sweepStaleFuzzDirs removes the stores of fuzz workers that died without cleaning up (a
// crash, or a coordinator that killed them), so that repeated runs do not fill the disk.
func sweepStaleFuzzDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mq-fuzz-node-*"))
	for _, d := range dirs {
		var pid, rnd int
		if _, err := fmt.Sscanf(filepath.Base(d), "mq-fuzz-node-%d-%d", &pid, &rnd); err != nil {
			continue
		}
		p, err := os.FindProcess(pid)
		if err == nil && !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone) {
			continue
		}
		os.RemoveAll(d)
	}
}

// watchHeap takes the process down, naming the input, when its heap passes fzHeapLimit: an
// input that makes the node allocate without bound would otherwise take the machine with it.
func (e *fuzzEnv) watchHeap() {
	defer e.watchDone.Done()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-e.stopWatch:
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if heap := sample[0].Value.Uint64(); heap > fzHeapLimit {
			in := "(between inputs)"
			if p := e.current.Load(); p != nil {
				in = *p
			}
			panic(fmt.Sprintf("fuzz node heap at %d MiB, above %d MiB, serving %s",
				heap>>20, fzHeapLimit>>20, in))
		}
	}
}

// fuzzLog is the node's log sink: a zerolog.Hook counting error-level records (panics apart)
// and a writer keeping the last lines to show with a failure.
type fuzzLog struct {
	panics atomic.Int64
	errs   atomic.Int64

	mu    sync.Mutex
	lines []string
}

// logMark is what fuzzLog had counted before an input.
type logMark struct{ panics, errs int64 }

// Run implements zerolog.Hook.
func (l *fuzzLog) Run(_ *zerolog.Event, level zerolog.Level, msg string) {
	if level < zerolog.ErrorLevel {
		return
	}
	if msg == "processor panicked" {
		l.panics.Add(1)
	} else {
		l.errs.Add(1)
	}
}

func (l *fuzzLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 32 {
		l.lines = slices.Delete(l.lines, 0, 1)
	}
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *fuzzLog) recent() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *fuzzLog) mark() logMark { return logMark{l.panics.Load(), l.errs.Load()} }

// since reports the panics and error records logged after m.
func (l *fuzzLog) since(m logMark, desc string) error {
	if l.panics.Load() != m.panics {
		return fmt.Errorf("a processor panicked serving %s\nrecent node logs:\n%s", desc, l.recent())
	}
	if l.errs.Load() != m.errs {
		return fmt.Errorf("the node logged an error (an operator must act) serving %s\nrecent node logs:\n%s",
			desc, l.recent())
	}
	return nil
}

// fuzzRequest is one request of an input with what the harness expects of it.
type fuzzRequest struct {
	cmd     *remoting.Command
	tcp     bool
	mayPark bool
}

// run serves one input and checks the node afterwards.
func (e *fuzzEnv) run(in fuzzInput) error {
	code := e.mapCode(in.code)
	req := e.build(code, in)
	wire := in.at(ctrlWire, 0)
	main := fuzzRequest{cmd: req, tcp: wire&fzTCP != 0, mayPark: mayPark(req)}
	desc := describe(main)
	e.current.Store(&desc)
	defer e.current.Store(nil)
	mark := e.logs.mark()

	resp, err := e.exchange(main, desc)
	if err != nil {
		return err
	}
	if err := e.logs.since(mark, desc); err != nil {
		return err
	}
	if follow := int(in.at(ctrlFollow, 0) % 8); follow != 0 {
		f := e.followUp(follow, req, wire&fzFollowTCP != 0)
		fdesc := desc + " then " + describe(f)
		e.current.Store(&fdesc)
		fresp, err := e.exchange(f, fdesc)
		if err != nil {
			return err
		}
		if err := e.logs.since(mark, fdesc); err != nil {
			return err
		}
		if err := checkListed(req, resp, f.cmd, fresp); err != nil {
			return fmt.Errorf("%s: %w", fdesc, err)
		}
	}
	if err := e.settle(desc); err != nil {
		return err
	}
	if err := e.logs.since(mark, desc); err != nil {
		return err
	}
	if err := e.checkStrays(desc); err != nil {
		return err
	}
	e.inputs++
	if e.cfg.honestEvery > 1 && e.inputs%e.cfg.honestEvery != 1 {
		return nil
	}
	if err := e.checkHonest(desc); err != nil {
		return err
	}
	if err := e.logs.since(mark, desc+" (or the honest requests after it)"); err != nil {
		return err
	}
	return e.checkStrays(desc)
}

// mapCode keeps a code the node serves and maps any other onto one, so that no input is wasted
// on REQUEST_CODE_NOT_SUPPORTED.
func (e *fuzzEnv) mapCode(c int32) int32 {
	if e.served[c] {
		return c
	}
	return e.codes[int(uint16(c))%len(e.codes)]
}

// key maps a fuzz key: an empty one or one starting with a control byte picks a real header
// field of the code (of any code, for a code without a template); any other is used as is.
func (e *fuzzEnv) key(code int32, k string) string {
	if k != "" && k[0] >= 0x20 {
		return k
	}
	keys := e.keys[code]
	if len(keys) == 0 {
		keys = e.allKeys
	}
	var b byte
	if k != "" {
		b = k[0]
	}
	return keys[int(b)%len(keys)]
}

// fuzzDict and fuzzInts hold names and numbers worth trying anywhere: the fuzzer seldom builds
// them from random bytes and small steps.
var (
	fuzzDict = []string{"", "..", "../../../../x/pwn", "%RETRY%../../x", "%DLQ%" + fzConsumer,
		"%RETRY%" + fzConsumer, names.TopicSchedule, "TBW102", "RMQ_SYS_TRANS_HALF_TOPIC", "a@b", "\xff\xfe",
		strings.Repeat("T", 127), strings.Repeat("T", 128), strings.Repeat("G", 255), strings.Repeat("G", 256),
		"/", fzTopic, fzConsumer, fzProducer, config.DefaultClusterName, config.DefaultBrokerName, "*", "TagA || TagB",
		"a b", ".", "%", "|", "\x00", "null", "CLUSTERING", "BROADCASTING", "SQL92"}
	fuzzInts = []int64{0, -1, 1, 2, 3, 4, 8, 16, 17, 18, 19, 127, 128, 255, 256, 1023, 1024, 1025,
		1<<15 - 1, 1 << 15, 1<<16 - 1, 1 << 16, 60000, 60001, 4 << 20, 4<<20 + 1, 16 << 20, 16<<20 + 1,
		1<<31 - 1, -1 << 31, 1 << 31, 1<<32 - 1, 1 << 32, 1 << 50, 1<<63 - 1, -1 << 63}
)

// build turns an input into its request.
func (e *fuzzEnv) build(code int32, in fuzzInput) *remoting.Command {
	tpl := e.templates[code]
	ext := map[string]string{}
	wire := in.at(ctrlWire, 0)
	if wire&fzEmptyExt == 0 {
		maps.Copy(ext, tpl.ext)
	}
	for i, fd := range in.fields {
		k := e.key(code, fd.key)
		switch in.at(ctrlModes+i, fzSkip) % 8 {
		case fzSet, fzSetDict:
			ext[k] = in.str(i)
		case fzSetNum:
			ext[k] = strconv.FormatInt(fd.num, 10)
		case fzSetInt:
			ext[k] = strconv.FormatInt(fuzzInts[pick(fd.num, len(fuzzInts))], 10)
		case fzDelete:
			delete(ext, k)
		}
	}
	vals := &fuzzVals{strs: []string{in.str(0), in.str(1), in.str(2), in.str(3), string(in.body)},
		nums: []int64{in.fields[0].num, in.fields[1].num, in.fields[2].num, in.fields[3].num}}
	var body []byte
	switch in.at(ctrlBody, fzBodyTemplate) % 4 {
	case fzBodyTemplate:
		if tpl.body != nil {
			body = tpl.body(nil)
		}
	case fzBodyRaw:
		body = in.body
	case fzBodyFuzzed:
		if tpl.body != nil {
			body = tpl.body(vals)
		} else {
			body = in.body
		}
	}
	req := remoting.NewRequest(code, ext, body)
	if wire&fzBinary != 0 {
		req.Serialize = remoting.SerializeRocketMQ
	}
	return req
}

// mayPark reports whether req is a pull the broker may hold longer than fzParkThreshold.
func mayPark(req *remoting.Command) bool {
	if req.Code != remoting.PullMessage {
		return false
	}
	var h protocol.PullMessageRequestHeader
	if h.Decode(req.ExtFields) != nil {
		return false
	}
	return h.HasSuspend() && h.SuspendTimeoutMillis > fzParkThreshold
}

func describe(r fuzzRequest) string {
	via, st := "in-process", "JSON"
	if r.tcp {
		via = "TCP"
	}
	if r.cmd.Serialize == remoting.SerializeRocketMQ {
		st = "binary"
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(r.cmd.ExtFields)) {
		fmt.Fprintf(&sb, " %q=%q", k, r.cmd.ExtFields[k])
	}
	body := r.cmd.Body
	if len(body) > 256 {
		body = body[:256]
	}
	return fmt.Sprintf("code %d (%s, %s) ext{%s } body[%d]=%q", r.cmd.Code, via, st, sb.String(),
		len(r.cmd.Body), body)
}

// exchange sends one request and checks its answer: it arrives (unless the request is a pull
// the broker may park) as a response no larger than the frame limit, and a listing decodes.
func (e *fuzzEnv) exchange(r fuzzRequest, desc string) (*remoting.Command, error) {
	wait := e.cfg.answerTimeout
	if r.mayPark {
		wait = e.cfg.parkWait
	}
	var resp *remoting.Command
	var err error
	if r.tcp {
		resp, err = e.viaTCP(r.cmd, wait)
	} else {
		resp, err = e.inproc(r.cmd, wait)
	}
	if errors.Is(err, context.DeadlineExceeded) && r.mayPark {
		// A parked long poll: drop the connection, which drops the pull, and go on.
		e.parked++
		if r.tcp {
			e.dropTCP()
		} else {
			e.tr.CloseConn(e.addr)
		}
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			e.wedged = true
		}
		return nil, fmt.Errorf("no answer to %s: %w\nrecent node logs:\n%s", desc, err, e.logs.recent())
	}
	if !resp.IsResponse() {
		return nil, fmt.Errorf("answer to %s lacks the response flag: %+v", desc, resp)
	}
	if n := frameBytes(resp); n > e.maxFrame {
		return nil, fmt.Errorf("answer to %s is a %d-byte frame, above the %d-byte limit", desc, n, e.maxFrame)
	}
	if err := decodeListing(r.cmd.Code, resp); err != nil {
		return nil, fmt.Errorf("answer to %s does not decode: %w\nbody: %.512q", desc, err, resp.Body)
	}
	return resp, nil
}

// frameBytes is the frame length word of resp once encoded (what the frame limit bounds).
func frameBytes(resp *remoting.Command) int {
	return len(remoting.AppendFrameHeader(nil, resp)) + len(resp.Body)
}

// inproc sends req through the node's dispatcher without a socket. A request unanswered after
// wait fails with context.DeadlineExceeded.
func (e *fuzzEnv) inproc(req *remoting.Command, wait time.Duration) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := e.tr.InvokeSync(ctx, e.addr, req)
	if errors.Is(err, remoting.ErrTimeout) || err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w (after %v)", context.DeadlineExceeded, wait)
	}
	return resp, err
}

// viaTCP sends req as a frame on the raw connection and reads frames until its answer; requests
// the node sends us (consumer notifications) are skipped. A frame above the limit is an error,
// as a client would take it. A request unanswered after wait fails with
// context.DeadlineExceeded.
func (e *fuzzEnv) viaTCP(req *remoting.Command, wait time.Duration) (*remoting.Command, error) {
	if e.conn == nil {
		c, err := net.DialTimeout("tcp", e.addr, e.cfg.answerTimeout)
		if err != nil {
			return nil, err
		}
		e.conn, e.rbuf = c, e.rbuf[:0]
	}
	if err := e.conn.SetDeadline(time.Now().Add(wait)); err != nil {
		e.dropTCP()
		return nil, err
	}
	if _, err := e.conn.Write(remoting.AppendFrame(nil, req)); err != nil {
		e.dropTCP()
		return nil, fmt.Errorf("write: %w", err)
	}
	for {
		for {
			fr, n, err := remoting.SplitFrame(e.rbuf, e.maxFrame)
			if err != nil {
				e.dropTCP()
				return nil, fmt.Errorf("answer frame: %w", err)
			}
			if n == 0 {
				break
			}
			cmd, err := remoting.DecodeFrame(slices.Clone(fr))
			e.rbuf = e.rbuf[:copy(e.rbuf, e.rbuf[n:])]
			if err != nil {
				e.dropTCP()
				return nil, fmt.Errorf("answer frame does not decode: %w", err)
			}
			if cmd.IsResponse() && cmd.Opaque == req.Opaque {
				return cmd, nil
			}
		}
		n, err := e.conn.Read(e.chunk)
		e.rbuf = append(e.rbuf, e.chunk[:n]...)
		if err != nil {
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				return nil, fmt.Errorf("%w (after %v)", context.DeadlineExceeded, wait)
			}
			e.dropTCP()
			return nil, fmt.Errorf("connection closed without an answer: %w", err)
		}
	}
}

func (e *fuzzEnv) dropTCP() {
	if e.conn != nil {
		e.conn.Close()
		e.conn = nil
	}
	e.rbuf = e.rbuf[:0]
}

// settle waits until what the input stored has reached the ConsumeQueues and every delayed
// message has been delivered (and dispatched), so that the files it makes appear during this
// input, not a later one. A store or a schedule that never catches up fails the input.
func (e *fuzzEnv) settle(desc string) error {
	st := e.node.Broker().Store()
	deadline := time.Now().Add(e.cfg.answerTimeout)
	dispatched := func() error {
		for st.DispatchedPhyOffset() < st.MaxPhyOffset() {
			if time.Now().After(deadline) {
				return fmt.Errorf("after %s, dispatch stalled at CommitLog offset %d of %d\nrecent node logs:\n%s",
					desc, st.DispatchedPhyOffset(), st.MaxPhyOffset(), e.logs.recent())
			}
			time.Sleep(100 * time.Microsecond)
		}
		return nil
	}
	if err := dispatched(); err != nil {
		return err
	}
	for woken := false; ; {
		resp, err := e.inproc(remoting.NewRequest(remoting.GetAllDelayOffset, nil, nil), e.cfg.answerTimeout)
		if err != nil {
			return fmt.Errorf("after %s, delay offsets: %w", desc, err)
		}
		w, err := protocol.DecodeDelayOffsetSerializeWrapper(resp.Body)
		if err != nil {
			return fmt.Errorf("after %s, delay offsets %q: %w", desc, resp.Body, err)
		}
		behind := ""
		for level := int32(1); level <= 18; level++ {
			if end := st.MaxOffsetInQueue(names.TopicSchedule, level-1); w.OffsetTable[level] < end {
				behind = fmt.Sprintf("level %d at %d of %d", level, w.OffsetTable[level], end)
				break
			}
		}
		if behind == "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, delayed delivery stalled: %s\nrecent node logs:\n%s", desc, behind,
				e.logs.recent())
		}
		if !woken {
			// Only a delayed send wakes the schedule service (send-backs wait for its idle
			// poll): send one, due in a millisecond.
			woken = true
			h := protocol.SendMessageRequestHeader{ProducerGroup: fzProducer, Topic: e.honest,
				DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(),
				MaxReconsumeTimes: -1, Properties: message.MarshalProperties(map[string]string{
					message.PropertyDelayTimeLevel: "1"})}
			_, err := e.inproc(remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(&h), []byte("wake")),
				e.cfg.answerTimeout)
			if err != nil {
				return fmt.Errorf("after %s, wake the schedule: %w", desc, err)
			}
			if err := dispatched(); err != nil {
				return err
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	return dispatched()
}

// checkStrays fails when anything but the chain down to the store exists under the sentinel,
// after removing it so that the next inputs are judged on their own.
func (e *fuzzEnv) checkStrays(desc string) error {
	strays, err := e.strays()
	if err != nil || len(strays) == 0 {
		return err
	}
	for _, p := range strays {
		os.RemoveAll(p)
	}
	return fmt.Errorf("%s created outside the store %s:\n%s", desc, e.expected[len(e.expected)-1],
		strings.Join(strays, "\n"))
}

// strays lists what exists under the sentinel besides the chain down to the store.
func (e *fuzzEnv) strays() ([]string, error) {
	var strays []string
	dir := e.sentinel
	for _, want := range e.expected {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, ent := range ents {
			if p := filepath.Join(dir, ent.Name()); p != want {
				strays = append(strays, p)
			}
		}
		dir = want
	}
	return strays, nil
}

// checkHonest stores a message on the honest topic, waits until it is dispatched, and asks the
// name service for the cluster (in-process, and over TCP every eighth time).
func (e *fuzzEnv) checkHonest(after string) error {
	refused := func(format string, args ...any) error {
		return fmt.Errorf("after %s, an honest client is refused: %s\nrecent node logs:\n%s", after,
			fmt.Sprintf(format, args...), e.logs.recent())
	}
	ask := func(req *remoting.Command) (*remoting.Command, error) {
		resp, err := e.inproc(req, e.cfg.answerTimeout)
		if err != nil {
			e.wedged = e.wedged || errors.Is(err, context.DeadlineExceeded)
			return nil, refused("request %d: %v", req.Code, err)
		}
		return resp, nil
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: fzProducer, Topic: e.honest, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	resp, err := ask(remoting.NewRequest(remoting.SendMessageV2,
		remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(&h)), []byte("honest")))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return refused("send: %s %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	var sent protocol.SendMessageResponseHeader
	if err := sent.Decode(resp.ExtFields); err != nil {
		return refused("send answer: %v", err)
	}
	deadline := time.Now().Add(e.cfg.answerTimeout)
	for {
		resp, err := ask(remoting.NewRequest(remoting.GetMaxOffset,
			remoting.EncodeHeader(&protocol.QueueHeader{Topic: e.honest, QueueID: sent.QueueID}), nil))
		if err != nil {
			return err
		}
		var off protocol.OffsetResponseHeader
		if resp.Code == remoting.Success && off.Decode(resp.ExtFields) == nil && off.Offset > sent.QueueOffset {
			break
		}
		if time.Now().After(deadline) {
			return refused("message stored at queue offset %d not dispatched after %v (max offset answer %s %v)",
				sent.QueueOffset, e.cfg.answerTimeout, remoting.ResponseCodeName(resp.Code), resp.ExtFields)
		}
		time.Sleep(time.Millisecond)
	}
	resp, err = ask(route.BuildGetBrokerClusterInfo())
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return refused("cluster info: %s %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	if e.inputs%(8*e.cfg.honestEvery) > 1 {
		return nil
	}
	resp, err = e.viaTCP(route.BuildGetBrokerClusterInfo(), e.cfg.answerTimeout)
	if err != nil {
		e.wedged = e.wedged || errors.Is(err, context.DeadlineExceeded)
		return refused("cluster info over TCP: %v", err)
	}
	if resp.Code != remoting.Success {
		return refused("cluster info over TCP: %s %s", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	return nil
}

// decodeListing decodes a successful listing with the decoder our clients, tools and slaves
// use: whatever names clients stored, everyone else must still be able to read the list.
func decodeListing(code int32, resp *remoting.Command) error {
	if resp.Code != remoting.Success || len(resp.Body) == 0 {
		return nil
	}
	var err error
	switch code {
	case remoting.GetAllTopicConfig:
		var w route.TopicConfigSerializeWrapper
		err = json.Unmarshal(resp.Body, &w)
	case remoting.GetAllSubscriptionGroupConfig:
		var w broker.SubscriptionGroupWrapper
		err = json.Unmarshal(resp.Body, &w)
	case remoting.GetAllConsumerOffset:
		_, err = protocol.DecodeConsumerOffsetSerializeWrapper(resp.Body)
	case remoting.GetAllDelayOffset:
		_, err = protocol.DecodeDelayOffsetSerializeWrapper(resp.Body)
	case remoting.GetTopicStatsInfo:
		_, err = protocol.DecodeTopicStatsTable(resp.Body)
	case remoting.GetConsumeStats:
		_, err = protocol.DecodeConsumeStats(resp.Body)
	case remoting.GetRouteInfoByTopic:
		_, err = route.DecodeTopicRouteData(resp.Body)
	case remoting.GetBrokerClusterInfo:
		_, err = route.DecodeClusterInfo(resp.Body)
	case remoting.GetAllTopicListFromNameServer, remoting.GetTopicsByCluster:
		_, err = route.DecodeTopicList(resp.Body)
	case remoting.GetKVListByNamespace:
		_, err = route.DecodeKVTable(resp.Body)
	case remoting.GetConsumerListByGroup:
		var b protocol.GetConsumerListByGroupResponseBody
		err = json.Unmarshal(resp.Body, &b)
	case remoting.LockBatchMQ:
		var b protocol.LockBatchResponseBody
		err = json.Unmarshal(resp.Body, &b)
	}
	return err
}

// followUp builds read i (1-7) of the names req carried: topic stats, route, consume stats,
// pull, consumer offset, all consumer offsets, all topic configs.
func (e *fuzzEnv) followUp(i int, req *remoting.Command, tcp bool) fuzzRequest {
	ext := req.ExtFields
	topic := firstOf(ext, fzTopic, "topic", "b", "Topic")
	group := firstOf(ext, fzConsumer, "consumerGroup", "group", "groupName", "a", "producerGroup")
	qid, _ := strconv.ParseInt(firstOf(ext, "0", "queueId", "e", "QueueId"), 10, 32)
	var cmd *remoting.Command
	switch i {
	case 1:
		cmd = remoting.NewRequest(remoting.GetTopicStatsInfo,
			remoting.EncodeHeader(&protocol.GetTopicStatsInfoRequestHeader{Topic: topic}), nil)
	case 2:
		cmd = route.BuildGetRouteInfo(topic)
	case 3:
		cmd = remoting.NewRequest(remoting.GetConsumeStats,
			remoting.EncodeHeader(&protocol.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}), nil)
	case 4:
		cmd = remoting.NewRequest(remoting.PullMessage, remoting.EncodeHeader(&protocol.PullMessageRequestHeader{
			ConsumerGroup: group, Topic: topic, QueueID: int32(qid), MaxMsgNums: 32,
			SysFlag: protocol.BuildPullSysFlag(false, false, true, false), Subscription: "*",
			ExpressionType: protocol.ExpressionTag}), nil)
	case 5:
		cmd = remoting.NewRequest(remoting.QueryConsumerOffset, remoting.EncodeHeader(
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: int32(qid)}), nil)
	case 6:
		cmd = remoting.NewRequest(remoting.GetAllConsumerOffset, nil, nil)
	default:
		cmd = remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil)
	}
	cmd.Serialize = req.Serialize
	return fuzzRequest{cmd: cmd, tcp: tcp}
}

func firstOf(ext map[string]string, def string, keys ...string) string {
	for _, k := range keys {
		if v := ext[k]; v != "" {
			return v
		}
	}
	return def
}

// checkListed: a topic the node said it created is listed under its exact name, so that names
// are stored as given, not corrupted (invalid UTF-8 included).
func checkListed(req, resp, follow, fresp *remoting.Command) error {
	if req.Code != remoting.UpdateAndCreateTopic || resp == nil || resp.Code != remoting.Success ||
		follow.Code != remoting.GetAllTopicConfig || fresp == nil || fresp.Code != remoting.Success {
		return nil
	}
	var w route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(fresp.Body, &w); err != nil {
		return nil // decodeListing reports it
	}
	if _, ok := w.TopicConfigTable[req.ExtFields["topic"]]; !ok {
		return fmt.Errorf("topic %q answered SUCCESS but is not listed", req.ExtFields["topic"])
	}
	return nil
}

// fuzzTemplates returns a valid request for every code the node serves. offset and msgID name a
// stored message of fzTopic.
func fuzzTemplates(offset int64, msgID string) map[int32]fuzzTemplate {
	now := time.Now().UnixMilli()
	hdr := remoting.EncodeHeader
	props := message.MarshalProperties(map[string]string{message.PropertyKeys: "key1", message.PropertyTags: "TagA"})
	send := protocol.SendMessageRequestHeader{ProducerGroup: fzProducer, Topic: fzTopic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, BornTimestamp: now, Properties: props, MaxReconsumeTimes: -1,
		BrokerName: config.DefaultBrokerName}
	batch := send
	batch.Batch = true
	msgBody := func(v *fuzzVals) []byte { return []byte(v.s(4, "hello")) }
	batchBody := func(v *fuzzVals) []byte {
		b := message.AppendBatchElement(nil, int32(v.n(0, 0)), []byte(v.s(0, "m1")), v.s(1, props))
		return message.AppendBatchElement(b, int32(v.n(1, 0)), []byte(v.s(2, "m2")), v.s(3, ""))
	}
	queue := &protocol.QueueHeader{Topic: fzTopic, BrokerName: config.DefaultBrokerName}
	regHdr := &protocol.RegisterBrokerRequestHeader{BrokerName: fzBroker, BrokerAddr: "127.0.0.1:1",
		ClusterName: fzCluster, HAServerAddr: "127.0.0.1:2"}
	brokerHdr := func() *protocol.QueryDataVersionRequestHeader {
		return &protocol.QueryDataVersionRequestHeader{BrokerName: fzBroker, BrokerAddr: "127.0.0.1:1",
			ClusterName: fzCluster}
	}
	regBody := func(v *fuzzVals) []byte {
		name := v.s(0, fzTopic)
		b := route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]route.TopicConfig{name: {TopicName: name, ReadQueueNums: int32(v.n(0, 4)),
				WriteQueueNums: int32(v.n(1, 4)), Perm: int32(v.n(2, 6)), TopicFilterType: v.s(1, route.FilterSingleTag)}},
			DataVersion: route.DataVersion{Timestamp: now, Counter: v.n(3, 1)}}}
		return b.Encode(false)
	}
	lockBody := func(v *fuzzVals) []byte {
		b, _ := json.Marshal(protocol.LockBatchRequestBody{ConsumerGroup: v.s(0, fzConsumer), ClientID: v.s(1, fzClient),
			MQSet: []protocol.MessageQueue{{Topic: v.s(2, fzTopic), BrokerName: v.s(3, config.DefaultBrokerName),
				QueueID: int(v.n(0, 0))}}})
		return b
	}
	return map[int32]fuzzTemplate{
		remoting.SendMessage:        {ext: hdr(&send), body: msgBody},
		remoting.SendReplyMessage:   {ext: hdr(&send), body: msgBody},
		remoting.SendMessageV2:      {ext: hdr((*protocol.SendMessageRequestHeaderV2)(&send)), body: msgBody},
		remoting.SendReplyMessageV2: {ext: hdr((*protocol.SendMessageRequestHeaderV2)(&send)), body: msgBody},
		remoting.SendBatchMessage:   {ext: hdr((*protocol.SendMessageRequestHeaderV2)(&batch)), body: batchBody},
		remoting.PullMessage: {ext: hdr(&protocol.PullMessageRequestHeader{ConsumerGroup: fzConsumer, Topic: fzTopic,
			MaxMsgNums: 32, SysFlag: protocol.BuildPullSysFlag(false, false, true, false), Subscription: "*",
			ExpressionType: protocol.ExpressionTag, BrokerName: config.DefaultBrokerName})},
		remoting.QueryMessage: {ext: hdr(&protocol.QueryMessageRequestHeader{Topic: fzTopic, Key: "key1", MaxNum: 32,
			EndTimestamp: now + time.Hour.Milliseconds()})},
		remoting.ViewMessageByID: {ext: hdr(&protocol.ViewMessageRequestHeader{Offset: offset})},
		remoting.QueryConsumerOffset: {ext: hdr(&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: fzConsumer,
			Topic: fzTopic, BrokerName: config.DefaultBrokerName})},
		remoting.UpdateConsumerOffset: {ext: hdr(&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: fzConsumer,
			Topic: fzTopic, CommitOffset: 1, BrokerName: config.DefaultBrokerName})},
		remoting.SearchOffsetByTimestamp: {ext: hdr(&protocol.SearchOffsetRequestHeader{Topic: fzTopic, Timestamp: now,
			BrokerName: config.DefaultBrokerName})},
		remoting.GetMaxOffset:            {ext: hdr(queue)},
		remoting.GetMinOffset:            {ext: hdr(queue)},
		remoting.GetEarliestMsgStoreTime: {ext: hdr(queue)},
		remoting.UpdateAndCreateTopic: {ext: hdr(&protocol.CreateTopicRequestHeader{Topic: "FuzzTopic2",
			DefaultTopic: "defaultTopic", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
			TopicFilterType: route.FilterSingleTag})},
		remoting.DeleteTopicInBroker:  {ext: hdr(&protocol.DeleteTopicRequestHeader{Topic: "FuzzTopic2"})},
		remoting.GetAllTopicConfig:    {},
		remoting.GetBrokerRuntimeInfo: {},
		remoting.GetTopicStatsInfo:    {ext: hdr(&protocol.GetTopicStatsInfoRequestHeader{Topic: fzTopic})},
		remoting.GetConsumeStats: {ext: hdr(&protocol.GetConsumeStatsRequestHeader{ConsumerGroup: fzConsumer,
			Topic: fzTopic})},
		remoting.GetAllConsumerOffset:          {},
		remoting.GetAllDelayOffset:             {},
		remoting.GetAllSubscriptionGroupConfig: {},
		remoting.UpdateAndCreateSubscription: {body: func(v *fuzzVals) []byte {
			c := broker.NewSubscriptionGroupConfig(v.s(0, fzConsumer))
			c.RetryQueueNums = int32(v.n(0, 1))
			c.RetryMaxTimes = int32(v.n(1, 16))
			c.BrokerID = v.n(2, 0)
			c.WhichBrokerWhenConsumeSlowly = v.n(3, 1)
			b, _ := json.Marshal(c)
			return b
		}},
		remoting.DeleteSubscriptionGroup: {ext: hdr(&protocol.DeleteSubscriptionGroupRequestHeader{
			GroupName: "FuzzGroupGone", RemoveOffset: true})},
		remoting.ConsumerSendMsgBack: {ext: hdr(&protocol.ConsumerSendMsgBackRequestHeader{Offset: offset,
			Group: fzConsumer, OriginMsgID: msgID, OriginTopic: fzTopic, MaxReconsumeTimes: 16,
			BrokerName: config.DefaultBrokerName})},
		remoting.HeartBeat: {body: func(v *fuzzVals) []byte {
			h := protocol.HeartbeatData{ClientID: v.s(0, fzClient),
				ProducerDataSet: []protocol.ProducerData{{GroupName: v.s(1, fzProducer)}}}
			groups := 1 + int(uint64(v.n(1, 0))%8)
			model := protocol.Clustering
			if v.n(2, 0)&1 != 0 {
				model = protocol.Broadcasting
			}
			for i := range groups {
				g := v.s(2, fzConsumer)
				if i > 0 {
					g += strconv.Itoa(i)
				}
				h.ConsumerDataSet = append(h.ConsumerDataSet, protocol.ConsumerData{GroupName: g,
					ConsumeType: protocol.ConsumePassively, MessageModel: model,
					ConsumeFromWhere: protocol.ConsumeFromLastOffset,
					SubscriptionDataSet: []protocol.SubscriptionData{{Topic: v.s(3, fzTopic), SubString: v.s(4, "*"),
						SubVersion: v.n(0, now), ExpressionType: protocol.ExpressionTag}}})
			}
			return h.Encode()
		}},
		remoting.UnregisterClient: {ext: hdr(&protocol.UnregisterClientRequestHeader{ClientID: "127.0.0.1@gone",
			ProducerGroup: fzProducer, ConsumerGroup: fzConsumer})},
		remoting.CheckClientConfig: {body: func(v *fuzzVals) []byte {
			b, _ := json.Marshal(map[string]any{"clientId": v.s(0, fzClient), "group": v.s(1, fzConsumer),
				"subscriptionData": protocol.SubscriptionData{Topic: v.s(2, fzTopic), SubString: v.s(3, "*"),
					ExpressionType: protocol.ExpressionTag}})
			return b
		}},
		remoting.GetConsumerListByGroup: {ext: hdr(&protocol.ConsumerGroupHeader{ConsumerGroup: fzConsumer})},
		remoting.LockBatchMQ:            {body: lockBody},
		remoting.UnlockBatchMQ:          {body: lockBody},

		remoting.PutKVConfig: {ext: hdr(&protocol.PutKVConfigRequestHeader{Namespace: fzNS, Key: "k", Value: "v"})},
		remoting.GetKVConfig: {ext: hdr(&protocol.GetKVConfigRequestHeader{Namespace: fzNS, Key: "k"})},
		remoting.DeleteKVConfig: {ext: hdr(&protocol.DeleteKVConfigRequestHeader{Namespace: fzNS,
			Key: "kgone"})},
		remoting.GetKVListByNamespace: {ext: hdr(&protocol.GetKVListByNamespaceRequestHeader{Namespace: fzNS})},
		remoting.RegisterBroker:       {ext: hdr(regHdr), body: regBody},
		remoting.UnregisterBroker: {ext: hdr(&protocol.UnregisterBrokerRequestHeader{BrokerName: fzBroker + "Gone",
			BrokerAddr: "127.0.0.1:3", ClusterName: fzCluster})},
		remoting.QueryDataVersion: {ext: hdr(brokerHdr()), body: func(v *fuzzVals) []byte {
			b, _ := json.Marshal(route.DataVersion{Timestamp: v.n(0, now), Counter: v.n(1, 1)})
			return b
		}},
		remoting.GetRouteInfoByTopic:           {ext: hdr(&protocol.GetRouteInfoRequestHeader{Topic: fzTopic})},
		remoting.GetBrokerClusterInfo:          {},
		remoting.GetAllTopicListFromNameServer: {},
		remoting.DeleteTopicInNamesrv: {ext: hdr(&protocol.DeleteTopicFromNamesrvRequestHeader{
			Topic: "FuzzTopicGone"})},
		remoting.RegisterTopicInNamesrv: {ext: hdr(&protocol.RegisterTopicRequestHeader{Topic: "FuzzTopic3"}),
			body: func(v *fuzzVals) []byte {
				r := route.TopicRouteData{QueueDatas: []route.QueueData{{BrokerName: v.s(0, fzBroker),
					ReadQueueNums: int32(v.n(0, 4)), WriteQueueNums: int32(v.n(1, 4)), Perm: int32(v.n(2, 6))}}}
				return r.Encode()
			}},
		remoting.GetTopicsByCluster: {ext: hdr(&protocol.GetTopicsByClusterRequestHeader{Cluster: config.DefaultClusterName})},
	}
}

// fuzzSeed is one seed input.
type fuzzSeed struct {
	code   int32
	ctrl   [ctrlLen]byte
	fields [4]fuzzField
	body   []byte
}

// seed starts a seed of code whose four fields are skipped: the code's valid request.
func seed(code int32) fuzzSeed {
	return fuzzSeed{code: code, ctrl: [ctrlLen]byte{fzSkip, fzSkip, fzSkip, fzSkip}}
}

func (s fuzzSeed) set(i int, key, val string) fuzzSeed {
	s.fields[i], s.ctrl[ctrlModes+i] = fuzzField{key: key, val: val}, fzSet
	return s
}

func (s fuzzSeed) setNum(i int, key string, n int64) fuzzSeed {
	s.fields[i], s.ctrl[ctrlModes+i] = fuzzField{key: key, num: n}, fzSetNum
	return s
}

// setInt sets the key to fuzzInts[n]: a seed whose mutations walk the table.
func (s fuzzSeed) setInt(i int, key string, v int64) fuzzSeed {
	s.fields[i], s.ctrl[ctrlModes+i] = fuzzField{key: key, num: int64(slices.Index(fuzzInts, v))}, fzSetInt
	return s
}

// setDict sets the key to fuzzDict entry v: a seed whose mutations walk the dictionary.
func (s fuzzSeed) setDict(i int, key, v string) fuzzSeed {
	s.fields[i], s.ctrl[ctrlModes+i] = fuzzField{key: key, num: int64(slices.Index(fuzzDict, v))}, fzSetDict
	return s
}

// vals gives field i values for a body built from them, leaving its mode alone.
func (s fuzzSeed) vals(i int, val string, n int64) fuzzSeed {
	s.fields[i].val, s.fields[i].num = val, n
	return s
}

func (s fuzzSeed) with(bits byte) fuzzSeed { s.ctrl[ctrlWire] |= bits; return s }

func (s fuzzSeed) bodyMode(mode byte, body []byte) fuzzSeed {
	s.ctrl[ctrlBody], s.body = mode, body
	return s
}

func (s fuzzSeed) then(follow byte) fuzzSeed { s.ctrl[ctrlFollow] = follow; return s }

// fuzzSeeds: every code's valid request in-process and, binary-encoded, over TCP; the attacks
// of issue 10; names that would make paths; oversized counts and times.
func fuzzSeeds() []fuzzSeed {
	tpl := fuzzTemplates(0, "")
	var seeds []fuzzSeed
	for _, code := range slices.Sorted(maps.Keys(tpl)) {
		seeds = append(seeds, seed(code), seed(code).with(fzBinary|fzTCP))
	}
	const escape = "../../../../x/pwn"
	compressed := (&route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]route.TopicConfig{escape: {TopicName: escape, ReadQueueNums: 4,
			WriteQueueNums: 4, Perm: 6}}}}).Encode(true)
	suspend := int64(protocol.BuildPullSysFlag(false, true, true, false))
	seeds = append(seeds,
		// issue 10: send-back with a group that climbs out of the store, straight to the DLQ.
		seed(remoting.ConsumerSendMsgBack).set(0, "group", escape).setNum(1, "delayLevel", -1),
		seed(remoting.ConsumerSendMsgBack).set(0, "group", escape).setNum(1, "delayLevel", 1),
		// issue 10: 2^31-1 queues, then their stats.
		seed(remoting.UpdateAndCreateTopic).set(0, "topic", "FuzzHugeQueues").
			setNum(1, "writeQueueNums", 1<<31-1).setNum(2, "readQueueNums", 1<<31-1).then(1),
		// issue 10: a pull suspended for 2^50 ms on an empty queue.
		seed(remoting.PullMessage).setNum(0, "sysFlag", suspend).setNum(1, "suspendTimeoutMillis", 1<<50).
			setNum(2, "queueId", 3),
		seed(remoting.PullMessage).setNum(0, "sysFlag", suspend).setNum(1, "suspendTimeoutMillis", 50).
			setNum(2, "queueId", 2).with(fzTCP),
		seed(remoting.PullMessage).setNum(0, "maxMsgNums", 1<<31-1).setNum(1, "queueOffset", -1),
		// names that would become paths, in every place a name reaches the store.
		seed(remoting.SendMessage).set(0, "topic", escape).then(7),
		seed(remoting.SendMessageV2).set(0, "b", "%RETRY%"+escape),
		seed(remoting.SendMessageV2).set(0, "b", "%DLQ%../x").with(fzBinary|fzTCP),
		seed(remoting.SendBatchMessage).set(0, "b", "..").setNum(1, "e", 0),
		seed(remoting.SendMessage).set(0, "topic", "FuzzAutoQueues").setNum(1, "defaultTopicQueueNums", 1<<31-1).
			then(1),
		seed(remoting.SendMessage).setNum(0, "queueId", 1<<31-1),
		seed(remoting.UpdateAndCreateTopic).set(0, "topic", escape).then(7),
		seed(remoting.UpdateAndCreateTopic).set(0, "topic", "/tmp/abs").then(7),
		seed(remoting.UpdateAndCreateTopic).set(0, "topic", "a\xff\xfeb").with(fzBinary|fzTCP).then(7),
		seed(remoting.UpdateAndCreateTopic).set(0, "topic", strings.Repeat("T", 128)).then(7),
		seed(remoting.UpdateAndCreateTopic).setNum(0, "writeQueueNums", -1).setNum(1, "readQueueNums", -5).then(1),
		seed(remoting.UpdateConsumerOffset).set(0, "consumerGroup", escape).set(1, "topic", "a@b").
			setNum(2, "queueId", 1<<31-1).then(6),
		seed(remoting.UpdateConsumerOffset).set(0, "consumerGroup", "g@x").then(5),
		seed(remoting.GetTopicStatsInfo).set(0, "topic", escape),
		seed(remoting.GetConsumeStats).set(0, "topic", ""),
		seed(remoting.DeleteTopicInBroker).set(0, "topic", escape),
		seed(remoting.DeleteTopicInBroker).set(0, "topic", ".."),
		seed(remoting.DeleteSubscriptionGroup).set(0, "groupName", escape),
		seed(remoting.QueryMessage).setNum(0, "maxNum", 1<<31-1).setNum(1, "beginTimestamp", -1<<63),
		seed(remoting.ViewMessageByID).setNum(0, "offset", -1),
		seed(remoting.ViewMessageByID).setNum(0, "offset", 1<<62),
		// valid values from the tables, whose mutations walk the other entries.
		seed(remoting.UpdateAndCreateTopic).set(0, "topic", "FuzzTableQueues").setInt(1, "writeQueueNums", 8).
			setInt(2, "readQueueNums", 8).then(1),
		seed(remoting.UpdateAndCreateTopic).setDict(0, "topic", fzTopic).then(7),
		seed(remoting.ConsumerSendMsgBack).setDict(0, "group", fzConsumer).setInt(1, "delayLevel", 3),
		seed(remoting.SendMessage).setDict(0, "topic", fzTopic).setInt(1, "queueId", 1).then(4),
		seed(remoting.PullMessage).setDict(0, "consumerGroup", fzConsumer).setInt(1, "maxMsgNums", 16),
		seed(remoting.UpdateConsumerOffset).setDict(0, "consumerGroup", fzConsumer).setInt(1, "queueId", 2).then(5),
		seed(remoting.LockBatchMQ).setDict(0, "", fzConsumer).setDict(2, "", fzTopic).bodyMode(fzBodyFuzzed, nil),
		seed(remoting.HeartBeat).setDict(2, "", fzConsumer).setDict(3, "", fzTopic).bodyMode(fzBodyFuzzed, nil).
			then(3),
		// bodies built from hostile values.
		seed(remoting.HeartBeat).vals(0, "127.0.0.1@x", 0).vals(1, escape, 7).vals(2, escape, 1).
			vals(3, escape, 0).bodyMode(fzBodyFuzzed, []byte("*")).then(3),
		seed(remoting.LockBatchMQ).vals(0, escape, 1<<31-1).vals(1, "c", 0).vals(2, escape, 0).
			bodyMode(fzBodyFuzzed, nil),
		seed(remoting.UpdateAndCreateSubscription).vals(0, escape, 1<<31-1).bodyMode(fzBodyFuzzed, nil).then(3),
		seed(remoting.PutKVConfig).set(0, "namespace", escape).set(1, "key", escape),
		seed(remoting.RegisterBroker).vals(0, escape, 1<<31-1).vals(1, "", 1<<31-1).bodyMode(fzBodyFuzzed, nil),
		seed(remoting.RegisterBroker).set(0, "compressed", "true").bodyMode(fzBodyRaw, compressed),
		seed(remoting.RegisterBroker).set(0, "compressed", "true").bodyMode(fzBodyRaw, []byte{0x78, 0x9c, 0xff}),
		seed(remoting.RegisterBroker).setNum(0, "bodyCrc32", int64(crc32.ChecksumIEEE([]byte("{}"))&0x7fffffff)).
			bodyMode(fzBodyRaw, []byte("{}")),
		seed(remoting.RegisterTopicInNamesrv).vals(0, fzBroker, -1).bodyMode(fzBodyFuzzed, nil),
		seed(remoting.QueryDataVersion).bodyMode(fzBodyRaw, []byte("[")),
		seed(remoting.GetKVListByNamespace).with(fzEmptyExt),
		seed(remoting.SendMessage).with(fzEmptyExt).bodyMode(fzBodyNone, nil),
	)
	return seeds
}
