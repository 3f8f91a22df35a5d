package route

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MasterID is the broker id of a master; slaves have ids >= 1.
const MasterID int64 = 0

// QueueData is one broker name's queues of a topic, as the name server keeps it and returns it
// in a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	// TopicSynFlag is the topic's system flag. The JSON key keeps RocketMQ 4.x's spelling
	// "topicSynFlag"; the decoder also accepts 5.x's "topicSysFlag".
	TopicSynFlag int32 `json:"topicSynFlag"`
}

// BrokerData is a broker name (a master and its slaves) and its addresses by broker id
// (MasterID = master).
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// MasterAddr returns the master's address, or "" when the broker name has no master.
func (b *BrokerData) MasterAddr() string { return b.BrokerAddrs[MasterID] }

// SelectAddr returns the master's address, or else the address with the lowest id ("" when
// there is none).
func (b *BrokerData) SelectAddr() string {
	if a, ok := b.BrokerAddrs[MasterID]; ok {
		return a
	}
	ids := slices.Sorted(maps.Keys(b.BrokerAddrs))
	if len(ids) == 0 {
		return ""
	}
	return b.BrokerAddrs[ids[0]]
}

// Clone returns a deep copy.
func (b *BrokerData) Clone() BrokerData {
	c := *b
	c.BrokerAddrs = maps.Clone(b.BrokerAddrs)
	if c.BrokerAddrs == nil {
		c.BrokerAddrs = map[int64]string{}
	}
	return c
}

func (b *BrokerData) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"cluster":`...)
	dst = appendString(dst, b.Cluster)
	dst = append(dst, `,"brokerName":`...)
	dst = appendString(dst, b.BrokerName)
	// brokerAddrs: always an object, never null, no whitespace (docs/protocol.md §3.1.2).
	dst = append(dst, `,"brokerAddrs":{`...)
	for i, id := range slices.Sorted(maps.Keys(b.BrokerAddrs)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = appendInt(dst, id)
		dst = append(dst, '"', ':')
		dst = appendString(dst, b.BrokerAddrs[id])
	}
	return append(dst, '}', '}')
}

func (q *QueueData) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = appendString(dst, q.BrokerName)
	dst = append(dst, `,"readQueueNums":`...)
	dst = appendInt(dst, int64(q.ReadQueueNums))
	dst = append(dst, `,"writeQueueNums":`...)
	dst = appendInt(dst, int64(q.WriteQueueNums))
	dst = append(dst, `,"perm":`...)
	dst = appendInt(dst, int64(q.Perm))
	dst = append(dst, `,"topicSynFlag":`...)
	dst = appendInt(dst, int64(q.TopicSynFlag))
	return append(dst, '}')
}

// TopicRouteData is the route of one topic: the answer to GET_ROUTEINFO_BY_TOPIC.
type TopicRouteData struct {
	// OrderTopicConf is "brokerName:queueCount;..." for a globally ordered topic, else "".
	OrderTopicConf string
	QueueDatas     []QueueData
	BrokerDatas    []BrokerData
	// FilterServerTable maps a broker address to its filter servers. This name server never
	// fills it; the decoder keeps what an Apache name server sends.
	FilterServerTable map[string][]string
}

// Encode returns the route as compact JSON, byte for byte in the form docs/protocol.md §3.1.1 shows:
//
//	{"orderTopicConf":null,"queueDatas":[...],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"a:1"}}],"filterServerTable":{}}
//
// Queue and broker datas are written in slice order, broker addresses by ascending id.
func (r *TopicRouteData) Encode() []byte { return r.AppendJSON(make([]byte, 0, 256)) }

// AppendJSON appends Encode's bytes to dst.
func (r *TopicRouteData) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"orderTopicConf":`...)
	if r.OrderTopicConf == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, r.OrderTopicConf)
	}
	dst = append(dst, `,"queueDatas":[`...)
	for i := range r.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.QueueDatas[i].appendJSON(dst)
	}
	dst = append(dst, `],"brokerDatas":[`...)
	for i := range r.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.BrokerDatas[i].appendJSON(dst)
	}
	dst = append(dst, `],"filterServerTable":{`...)
	for i, addr := range slices.Sorted(maps.Keys(r.FilterServerTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, addr)
		dst = append(dst, ':')
		dst = appendStringList(dst, r.FilterServerTable[addr])
	}
	return append(dst, '}', '}')
}

// Clone returns a deep copy.
func (r *TopicRouteData) Clone() *TopicRouteData {
	c := &TopicRouteData{OrderTopicConf: r.OrderTopicConf, QueueDatas: slices.Clone(r.QueueDatas)}
	if r.BrokerDatas != nil {
		c.BrokerDatas = make([]BrokerData, len(r.BrokerDatas))
		for i := range r.BrokerDatas {
			c.BrokerDatas[i] = r.BrokerDatas[i].Clone()
		}
	}
	if r.FilterServerTable != nil {
		c.FilterServerTable = make(map[string][]string, len(r.FilterServerTable))
		for k, v := range r.FilterServerTable {
			c.FilterServerTable[k] = slices.Clone(v)
		}
	}
	return c
}

// Wire forms for decoding: lenient about what Apache name servers (fastjson) and older or newer
// versions write.
type wireQueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSynFlag   *int32 `json:"topicSynFlag"`
	TopicSysFlag   *int32 `json:"topicSysFlag"` // RocketMQ 5.x spelling
}

type wireBrokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}

type wireRoute struct {
	OrderTopicConf    *string          `json:"orderTopicConf"`
	QueueDatas        []wireQueueData  `json:"queueDatas"`
	BrokerDatas       []wireBrokerData `json:"brokerDatas"`
	FilterServerTable json.RawMessage  `json:"filterServerTable"`
}

func (w *wireQueueData) queueData() QueueData {
	q := QueueData{BrokerName: w.BrokerName, ReadQueueNums: w.ReadQueueNums,
		WriteQueueNums: w.WriteQueueNums, Perm: w.Perm}
	switch {
	case w.TopicSynFlag != nil:
		q.TopicSynFlag = *w.TopicSynFlag
	case w.TopicSysFlag != nil:
		q.TopicSynFlag = *w.TopicSysFlag
	}
	return q
}

func (w *wireBrokerData) brokerData() (BrokerData, error) {
	b := BrokerData{Cluster: w.Cluster, BrokerName: w.BrokerName,
		BrokerAddrs: make(map[int64]string, len(w.BrokerAddrs))}
	for k, addr := range w.BrokerAddrs {
		id, err := strconv.ParseInt(strings.TrimSpace(k), 10, 64)
		if err != nil {
			return b, fmt.Errorf("%w: broker %q: broker id %q is not an integer", ErrMalformed,
				w.BrokerName, k)
		}
		b.BrokerAddrs[id] = addr
	}
	return b, nil
}

// DecodeTopicRouteData parses a route body from this name server or from an Apache RocketMQ one:
// brokerAddrs may have quoted ("0") or bare (0) integer keys, field names match
// case-insensitively, unknown keys are ignored, and "topicSysFlag" is read as TopicSynFlag. A
// missing queueDatas or brokerAddrs decodes as empty. Errors wrap ErrMalformed.
func DecodeTopicRouteData(b []byte) (*TopicRouteData, error) {
	var w wireRoute
	if err := json.Unmarshal(quoteNumericKeys(b), &w); err != nil {
		return nil, fmt.Errorf("%w: topic route data: %v", ErrMalformed, err)
	}
	r := &TopicRouteData{QueueDatas: make([]QueueData, 0, len(w.QueueDatas)),
		BrokerDatas: make([]BrokerData, 0, len(w.BrokerDatas))}
	if w.OrderTopicConf != nil {
		r.OrderTopicConf = *w.OrderTopicConf
	}
	for i := range w.QueueDatas {
		r.QueueDatas = append(r.QueueDatas, w.QueueDatas[i].queueData())
	}
	for i := range w.BrokerDatas {
		bd, err := w.BrokerDatas[i].brokerData()
		if err != nil {
			return nil, err
		}
		r.BrokerDatas = append(r.BrokerDatas, bd)
	}
	// The filter server table is informational; like the Go client, ignore a shape we do not
	// understand rather than reject the route.
	var fst map[string][]string
	if len(w.FilterServerTable) > 0 && json.Unmarshal(w.FilterServerTable, &fst) == nil && len(fst) > 0 {
		r.FilterServerTable = fst
	}
	return r, nil
}

// ClusterInfo is the answer to GET_BROKER_CLUSTER_INFO: every broker name and every cluster.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData // broker name -> broker data
	ClusterAddrTable map[string][]string   // cluster name -> broker names (sorted)
}

// Encode returns compact JSON with keys sorted:
//
//	{"brokerAddrTable":{"broker-a":{"cluster":"c","brokerName":"broker-a","brokerAddrs":{"0":"a:1"}}},"clusterAddrTable":{"c":["broker-a"]}}
func (c *ClusterInfo) Encode() []byte {
	dst := append(make([]byte, 0, 256), `{"brokerAddrTable":{`...)
	for i, name := range slices.Sorted(maps.Keys(c.BrokerAddrTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		bd := c.BrokerAddrTable[name]
		dst = appendString(dst, name)
		dst = append(dst, ':')
		dst = bd.appendJSON(dst)
	}
	dst = append(dst, `},"clusterAddrTable":{`...)
	for i, cluster := range slices.Sorted(maps.Keys(c.ClusterAddrTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, cluster)
		dst = append(dst, ':')
		dst = appendStringList(dst, c.ClusterAddrTable[cluster])
	}
	return append(dst, '}', '}')
}

// DecodeClusterInfo parses a ClusterInfo body (ours or an Apache name server's, bare integer
// keys accepted). Errors wrap ErrMalformed.
func DecodeClusterInfo(b []byte) (*ClusterInfo, error) {
	var w struct {
		BrokerAddrTable  map[string]wireBrokerData `json:"brokerAddrTable"`
		ClusterAddrTable map[string][]string       `json:"clusterAddrTable"`
	}
	if err := json.Unmarshal(quoteNumericKeys(b), &w); err != nil {
		return nil, fmt.Errorf("%w: cluster info: %v", ErrMalformed, err)
	}
	c := &ClusterInfo{BrokerAddrTable: make(map[string]BrokerData, len(w.BrokerAddrTable)),
		ClusterAddrTable: make(map[string][]string, len(w.ClusterAddrTable))}
	for name, wb := range w.BrokerAddrTable {
		bd, err := wb.brokerData()
		if err != nil {
			return nil, err
		}
		c.BrokerAddrTable[name] = bd
	}
	for cluster, names := range w.ClusterAddrTable {
		names = slices.Clone(names)
		slices.Sort(names)
		c.ClusterAddrTable[cluster] = names
	}
	return c, nil
}

// TopicList is the body of GET_ALL_TOPIC_LIST_FROM_NAMESERVER and GET_TOPICS_BY_CLUSTER.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// Encode returns {"topicList":[...]} (and "brokerAddr" when set).
func (l *TopicList) Encode() []byte {
	dst := append(make([]byte, 0, 64), `{"topicList":`...)
	dst = appendStringList(dst, l.TopicList)
	if l.BrokerAddr != "" {
		dst = append(dst, `,"brokerAddr":`...)
		dst = appendString(dst, l.BrokerAddr)
	}
	return append(dst, '}')
}

// DecodeTopicList parses a TopicList body. Errors wrap ErrMalformed.
func DecodeTopicList(b []byte) (*TopicList, error) {
	var l TopicList
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%w: topic list: %v", ErrMalformed, err)
	}
	return &l, nil
}

// KVTable is the body of GET_KV_LIST_BY_NAMESPACE and of REGISTER_BROKER's response:
// {"table":{"key":"value"}}.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// Encode returns the table as JSON with sorted keys.
func (t *KVTable) Encode() []byte {
	dst := append(make([]byte, 0, 64), `{"table":{`...)
	for i, k := range slices.Sorted(maps.Keys(t.Table)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, t.Table[k])
	}
	return append(dst, '}', '}')
}

// DecodeKVTable parses a KVTable body. Errors wrap ErrMalformed.
func DecodeKVTable(b []byte) (*KVTable, error) {
	var t KVTable
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%w: kv table: %v", ErrMalformed, err)
	}
	return &t, nil
}
