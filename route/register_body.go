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

// Encode returns the body as JSON, or with compress, in RocketMQ 4.x's compact form (see
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
		putBlock(fmt.Appendf(nil, "%s %d %d %d %s", tc.TopicName, tc.ReadQueueNums,
			tc.WriteQueueNums, tc.Perm, tc.TopicFilterType))
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
	if err := json.Unmarshal(data, b); err != nil {
		return nil, fmt.Errorf("%w: register broker body: %v", ErrMalformed, err)
	}
	if b.TopicConfigSerializeWrapper.TopicConfigTable == nil {
		b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
	}
	for name, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		if tc.TopicName == "" { // Java keys the table by name; trust the key
			tc.TopicName = name
			b.TopicConfigSerializeWrapper.TopicConfigTable[name] = tc
		}
	}
	return b, nil
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
	if r.err == nil && n < 0 {
		r.fail("topic count %d is negative", n)
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

// parseTopicConfigLine reads TopicConfig.encode()'s "name read write perm filterType" (RocketMQ
// 5.x appends an attributes field, which is ignored).
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

// checkTopicNames refuses a registration whose topic table holds a name that is not a valid
// topic (internal/names), as key or as topicName: the name server would hand it to every client
// as a route. The error names the entry.
func (b *RegisterBrokerBody) checkTopicNames() error {
	for key, tc := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		if err := names.CheckTopic(key); err != nil {
			return fmt.Errorf("topicConfigTable key: %w", err)
		}
		if tc.TopicName != key {
			if err := names.CheckTopic(tc.TopicName); err != nil {
				return fmt.Errorf("topicConfigTable[%s].topicName: %w", key, err)
			}
		}
	}
	return nil
}

// bodyCRC32 is RocketMQ's UtilAll.crc32: the IEEE CRC-32 with the sign bit cleared.
func bodyCRC32(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7fffffff) }
