package route

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mqgo/mq/internal/names"
)

// Topic filter types (TopicConfig.TopicFilterType); part of the wire format.
const (
	FilterSingleTag = "SINGLE_TAG"
	FilterMultiTag  = "MULTI_TAG"
)

// DataVersion identifies one state of a broker's topic configuration. A broker bumps it whenever
// its topics change; the name server re-reads the topics only when it changes.
type DataVersion struct {
	Timestamp int64 `json:"timestamp"` // Unix milliseconds
	Counter   int64 `json:"counter"`
}

// TopicConfig is one topic as a broker reports it in REGISTER_BROKER.
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int32  `json:"readQueueNums"`
	WriteQueueNums  int32  `json:"writeQueueNums"`
	Perm            int32  `json:"perm"`
	TopicFilterType string `json:"topicFilterType"` // FilterSingleTag when empty
	TopicSysFlag    int32  `json:"topicSysFlag"`
	Order           bool   `json:"order"`
	// Attributes are RocketMQ 5's topic attributes (TopicConfig.attributes), such as
	// "message.type"; the broker checks and changes them (internal/broker/tables' attributes.go).
	Attributes map[string]string `json:"attributes,omitempty"`
}

// TopicConfigSerializeWrapper is a broker's topic table and its version.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// RegisterBrokerBody is the body of REGISTER_BROKER.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// maxInflatedBody bounds a compressed registration body once inflated, so a zlib bomb costs
// nothing. 64 MiB holds well over a million topic entries.
const maxInflatedBody = 64 << 20

// Encode returns the body as JSON, or with compress, in RocketMQ's compact form (see
// DecodeRegisterBrokerBody), which drops TopicSysFlag and Order.
func (b *RegisterBrokerBody) Encode(compress bool) []byte {
	w := *b
	w.TopicConfigSerializeWrapper.TopicConfigTable = make(map[string]TopicConfig,
		len(b.TopicConfigSerializeWrapper.TopicConfigTable))
	for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = FilterSingleTag
		}
		w.TopicConfigSerializeWrapper.TopicConfigTable[name] = tc
	}
	if w.FilterServerList == nil {
		w.FilterServerList = []string{}
	}
	if compress {
		return w.encodeCompressed()
	}
	out, err := json.Marshal(&w)
	if err != nil { // only plain strings, numbers and maps of them: cannot fail
		panic(fmt.Sprintf("route: encode RegisterBrokerBody: %v", err))
	}
	return out
}

// encodeCompressed writes, zlib-deflated (RocketMQ's RegisterBrokerBody.encode(true)):
//
//	int32 len, DataVersion JSON
//	int32 topic count
//	per topic: int32 len, "topicName readQueueNums writeQueueNums perm topicFilterType"
//	int32 len, filter server list JSON
//
// All integers big-endian.
func (b *RegisterBrokerBody) encodeCompressed() []byte {
	var raw bytes.Buffer
	putBlock := func(p []byte) {
		raw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(p))))
		raw.Write(p)
	}
	dv, _ := json.Marshal(b.TopicConfigSerializeWrapper.DataVersion)
	putBlock(dv)
	table := b.TopicConfigSerializeWrapper.TopicConfigTable
	raw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(table))))
	for _, name := range slices.Sorted(maps.Keys(table)) {
		tc := table[name]
		line := fmt.Appendf(nil, "%s %d %d %d %s", tc.TopicName, tc.ReadQueueNums,
			tc.WriteQueueNums, tc.Perm, tc.TopicFilterType)
		if len(tc.Attributes) > 0 {
			// RocketMQ 5's sixth field: the attributes as JSON (TopicConfig.encode).
			attrs, _ := json.Marshal(tc.Attributes) // a map of strings: cannot fail
			line = append(append(line, ' '), attrs...)
		}
		putBlock(line)
	}
	fs, _ := json.Marshal(b.FilterServerList)
	putBlock(fs)

	var out bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&out, zlib.BestCompression) // the level is valid
	_, _ = zw.Write(raw.Bytes())                             // a bytes.Buffer never fails
	_ = zw.Close()
	return out.Bytes()
}

// DecodeRegisterBrokerBody parses a REGISTER_BROKER body: JSON, or, when compressed, RocketMQ
// 4.x's zlib-deflated compact form. An empty body decodes as an empty registration with
// DataVersion zero, as RocketMQ does. Errors wrap ErrMalformed.
func DecodeRegisterBrokerBody(data []byte, compressed bool) (*RegisterBrokerBody, error) {
	b := &RegisterBrokerBody{}
	if len(data) == 0 {
		b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		return b, nil
	}
	if compressed {
		return decodeCompressed(data)
	}
	// The table and the filter list are kept raw and read entry by entry: a 16 MiB body of
	// empty entries ({"a":{},"b":{},...}) would otherwise become millions of map entries before
	// any count could be checked.
	var raw struct {
		Wrapper struct {
			Table       json.RawMessage `json:"topicConfigTable"`
			DataVersion DataVersion     `json:"dataVersion"`
		} `json:"topicConfigSerializeWrapper"`
		Filters json.RawMessage `json:"filterServerList"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: register broker body: %v", ErrMalformed, err)
	}
	table, err := decodeTopicTable(raw.Wrapper.Table, maxRegisterTopics)
	if err != nil {
		return nil, fmt.Errorf("%w: register broker body: topicConfigTable: %v", ErrMalformed, err)
	}
	b.TopicConfigSerializeWrapper = TopicConfigSerializeWrapper{TopicConfigTable: table,
		DataVersion: raw.Wrapper.DataVersion}
	if len(raw.Filters) <= maxFilterListBytes {
		if err := json.Unmarshal(raw.Filters, &b.FilterServerList); err != nil && len(raw.Filters) > 0 {
			return nil, fmt.Errorf("%w: register broker body: filterServerList: %v", ErrMalformed, err)
		}
	} // else left out, as the compressed form leaves out an unreadable one: nothing reads it
	return b, nil
}

// maxFilterListBytes bounds the filter server list a JSON registration may carry (RocketMQ
// filter servers are deprecated; a broker has a few).
const maxFilterListBytes = 64 << 10

// decodeTopicTable reads a JSON topic table one entry at a time, refusing more than limit
// entries. null or absent is an empty table. An entry without topicName takes its key, as Java
// keys the table by name.
func decodeTopicTable(data json.RawMessage, limit int) (map[string]TopicConfig, error) {
	table := map[string]TopicConfig{}
	if len(data) == 0 || string(data) == "null" {
		return table, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	for d.More() {
		if len(table) >= limit {
			return nil, fmt.Errorf("more than %d topics", limit)
		}
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // inside an object the decoder yields only string keys
		var tc TopicConfig
		if err := d.Decode(&tc); err != nil {
			return nil, fmt.Errorf("%s: %v", names.Quote(key, len(key)), err)
		}
		if tc.TopicName == "" {
			tc.TopicName = key
		}
		table[key] = tc
	}
	return table, nil
}

func decodeCompressed(data []byte) (*RegisterBrokerBody, error) {
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed register broker body: %v", ErrMalformed, err)
	}
	defer zr.Close()
	r := &blockReader{r: io.LimitReader(zr, maxInflatedBody)}
	b := &RegisterBrokerBody{}
	w := &b.TopicConfigSerializeWrapper
	if dv := r.block("data version"); r.err == nil {
		if err := json.Unmarshal(dv, &w.DataVersion); err != nil {
			r.fail("data version: %v", err)
		}
	}
	n := r.int32("topic count")
	if r.err == nil && (n < 0 || n > maxRegisterTopics) {
		r.fail("topic count %d out of range [0, %d]", n, maxRegisterTopics)
	}
	w.TopicConfigTable = make(map[string]TopicConfig, min(int(max(n, 0)), 1024))
	for i := int32(0); r.err == nil && i < n; i++ {
		entry := r.block("topic config")
		if r.err != nil {
			break
		}
		tc, err := parseTopicConfigLine(string(entry))
		if err != nil {
			r.fail("topic config %d: %v", i, err)
			break
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	fs := r.block("filter server list")
	if r.err == nil {
		// Read to the end so zlib verifies its checksum: a truncated stream is an error even when
		// the blocks happened to be complete.
		if _, err := io.Copy(io.Discard, r.r); err != nil {
			r.fail("%v", readErr(err))
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	// RocketMQ ignores an unreadable filter server list; so do we.
	_ = json.Unmarshal(fs, &b.FilterServerList)
	return b, nil
}

// parseTopicConfigLine reads TopicConfig.encode()'s "name read write perm filterType" and
// RocketMQ 5's sixth field, the attributes as JSON; like RocketMQ, attributes that do not parse
// (a key or value with a space splits them) are left out.
func parseTopicConfigLine(s string) (TopicConfig, error) {
	f := strings.Split(s, " ")
	if len(f) < 5 || f[0] == "" {
		return TopicConfig{}, fmt.Errorf("%q is not \"name read write perm filterType\"", s)
	}
	tc := TopicConfig{TopicName: f[0], TopicFilterType: f[4]}
	for i, dst := range []*int32{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm} {
		v, err := strconv.ParseInt(f[i+1], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("%q: field %d is not an integer", s, i+1)
		}
		*dst = int32(v)
	}
	if len(f) >= 6 {
		var attrs map[string]string
		if json.Unmarshal([]byte(f[5]), &attrs) == nil && len(attrs) > 0 {
			tc.Attributes = attrs
		}
	}
	return tc, nil
}

// blockReader reads the length-prefixed blocks of the compressed form and keeps the first error.
type blockReader struct {
	r   io.Reader
	err error
}

func (r *blockReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: compressed register broker body: %s", ErrMalformed,
			fmt.Sprintf(format, args...))
	}
}

func (r *blockReader) int32(what string) int32 {
	if r.err != nil {
		return 0
	}
	var b [4]byte
	if _, err := io.ReadFull(r.r, b[:]); err != nil {
		r.fail("%s: %v", what, readErr(err))
		return 0
	}
	return int32(binary.BigEndian.Uint32(b[:]))
}

func (r *blockReader) block(what string) []byte {
	n := r.int32(what + " length")
	if r.err != nil {
		return nil
	}
	if n < 0 || n > maxInflatedBody {
		r.fail("%s length %d out of range", what, n)
		return nil
	}
	// Read through a bounded buffer rather than trusting n for the allocation.
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r.r, int64(n)); err != nil {
		r.fail("%s: %v", what, readErr(err))
		return nil
	}
	return buf.Bytes()
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Bounds on what one registration may put in the route table (RocketMQ has none).
const (
	// maxRegisterTopics caps a registration's topic table, checked while it is decoded: a
	// 16 MiB frame of minimal JSON entries, or a compressed body inflating to 64 MiB, would
	// otherwise hold millions. 131,072 is well above what one broker serves.
	maxRegisterTopics = 1 << 17
)

// topicScrub is what scrubTopics left out of or changed in a registration's topic table.
type topicScrub struct {
	// skipped counts entries dropped for a name that is not a valid topic; firstBad is the
	// error of the one with the least key, so the log names the same entry every time.
	skipped  int
	firstBad *names.Error
	// clamped counts entries whose queue counts were brought into [0, Options.MaxQueueNums];
	// firstClamped is the least of their names.
	clamped      int
	firstClamped string
}

// scrubTopics drops every entry whose key or topicName is not a valid topic (internal/names)
// and clamps queue counts into [0, maxQ]. A bad name is skipped rather than refusing
// the registration: an Apache broker registers its broker and cluster names as topics, and its
// default broker name is the host name, dots and all; those topics are unusable as routes, the
// broker's other topics are not.
func (b *RegisterBrokerBody) scrubTopics(maxQ int32) topicScrub {
	var s topicScrub
	var badKey string
	table := b.TopicConfigSerializeWrapper.TopicConfigTable
	for key, tc := range table {
		err := names.CheckTopic(key)
		if err == nil && tc.TopicName != key {
			err = names.CheckTopic(tc.TopicName)
		}
		if err != nil {
			delete(table, key) // deleting during range is defined: the entry is not visited again
			var ne *names.Error
			if errors.As(err, &ne) && (s.firstBad == nil || key < badKey) {
				s.firstBad, badKey = ne, key
			}
			s.skipped++
			continue
		}
		r, w := clampQueueNums(tc.ReadQueueNums, maxQ), clampQueueNums(tc.WriteQueueNums, maxQ)
		if r != tc.ReadQueueNums || w != tc.WriteQueueNums {
			tc.ReadQueueNums, tc.WriteQueueNums = r, w
			table[key] = tc
			if s.clamped == 0 || key < s.firstClamped {
				s.firstClamped = key
			}
			s.clamped++
		}
	}
	return s
}

// clampQueueNums brings a queue count into [0, maxQ]. Zero stays: RocketMQ sets a broker's
// write queues of a topic to 0 to drain it.
func clampQueueNums(n, maxQ int32) int32 { return max(0, min(n, maxQ)) }

// bodyCRC32 is RocketMQ's UtilAll.crc32: the IEEE CRC-32 with the sign bit cleared.
func bodyCRC32(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7fffffff) }
