package remoting

import (
	"strconv"
	"sync/atomic"
)

// Flag bits of Command.Flag (part of the wire format).
const (
	FlagResponse int32 = 1 << 0 // the frame answers a request
	FlagOneway   int32 = 1 << 1 // the sender expects no answer
)

// SerializeType says how a frame's header is encoded. It is the high byte of the header-length
// word.
type SerializeType byte

// The two header serializations RocketMQ speaks.
const (
	SerializeJSON     SerializeType = 0
	SerializeRocketMQ SerializeType = 1
)

// ProtocolVersion is the version number this project writes into every command. Clients record it
// as the broker's version; it must stay non-negative (docs/protocol.md §5.1).
const ProtocolVersion int16 = 399

// Language identifies the implementation that sent a command. In JSON headers it travels as its
// name ("GO"), in binary headers as its number (9).
type Language byte

// Languages known to RocketMQ, numbered as in its LanguageCode enum (part of the wire format).
const (
	LanguageJava Language = iota
	LanguageCPP
	LanguageDotNet
	LanguagePython
	LanguageDelphi
	LanguageErlang
	LanguageRuby
	LanguageOther
	LanguageHTTP
	LanguageGo
	LanguagePHP
	LanguageOMS
	LanguageRust
)

var languageNames = [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
	"OTHER", "HTTP", "GO", "PHP", "OMS", "RUST"}

// String returns the language's wire name.
func (l Language) String() string {
	if int(l) < len(languageNames) {
		return languageNames[l]
	}
	return "OTHER"
}

func languageFromName(s string) Language {
	for i, n := range languageNames {
		if n == s {
			return Language(i)
		}
	}
	return LanguageOther
}

// Command is one RocketMQ remoting frame: a request, a response, or a one-way request. The fields
// mirror Java's RemotingCommand. A Command is not safe for concurrent mutation; once handed to a
// transport it belongs to the transport until the call returns.
type Command struct {
	Code      int32
	Language  Language
	Version   int16
	Opaque    int32
	Flag      int32
	Remark    string
	ExtFields map[string]string
	Body      []byte

	// Serialize is the header encoding used when this command is written. A request arriving
	// from the network records the type it used, and NewResponseFor copies it, so a response
	// answers in the caller's serialization.
	Serialize SerializeType

	// Fields, when ExtFields is nil, is the header the ROCKETMQ (binary) encoder writes the
	// extension fields from, straight into the frame: a request built this way
	// (NewRequestFields) takes no map. Whatever must read the fields as a map first
	// (Materialize): an RPC hook, the in-process transport, the JSON encoder.
	Fields BinaryHeader

	// rawExt, when ExtFields and Fields are nil, holds the binary extension-field entries of a
	// send request as the server read them (rawSendCode): FieldReader and LookupExt read them
	// in place, Materialize parses them into ExtFields.
	rawExt string

	// OnWritten, when set on a response, is called once the transport no longer needs Body:
	// after the socket write finished (or failed), or after an in-process receiver copied it.
	// It lets a pull response lend slices of mapped storage without copying them.
	OnWritten func()
}

// NewRequestFields makes a request with a fresh opaque whose extension fields h writes when
// the request is encoded (Command.Fields).
func NewRequestFields(code int32, h BinaryHeader, body []byte) *Command {
	return &Command{Code: code, Language: LanguageGo, Version: ProtocolVersion, Opaque: NextOpaque(),
		Fields: h, Body: body}
}

// Materialize moves Fields into ExtFields, for a reader of the map. Commands are not safe for
// concurrent use: the one goroutine that holds a request calls it before the request is
// shared.
func (c *Command) Materialize() { c.materialize(0) }

// materialize is Materialize leaving room for room more fields (a signature's).
func (c *Command) materialize(room int) {
	if c.ExtFields != nil {
		return
	}
	if c.Fields != nil {
		c.ExtFields = EncodeHeaderRoom(c.Fields, room)
		c.Fields = nil
		return
	}
	if c.rawExt != "" {
		b := []byte(c.rawExt)
		n, _ := countBinaryExtFields(b, 0, 0) // checked when the frame was decoded
		c.ExtFields = make(map[string]string, n+room)
		putBinaryExtFields(c.ExtFields, &headerStrings{b: b}, b, 0)
		c.rawExt = ""
	}
}

// LookupExt returns one extension field and whether it is present, without building the map
// of a request whose fields the server left in its frame.
func (c *Command) LookupExt(key string) (string, bool) {
	if c.fieldsToRaw() {
		v, _, ok := rawExtLookup(c.rawExt, key, 0)
		return v, ok
	}
	c.Materialize()
	v, ok := c.ExtFields[key]
	return v, ok
}

// FieldReader reads c's extension fields: from the map, or in place from the frame when the
// server left them there (a send's; see Dispatcher.ReadsRawHeader). It is a value so that a
// decoder's reader stays on its stack.
func (c *Command) FieldReader() FieldReader {
	if c.fieldsToRaw() {
		return FieldReader{raw: c.rawExt}
	}
	c.Materialize()
	return FieldReader{ext: c.ExtFields}
}

// fieldsToRaw reports whether c's fields can be read in place (rawExt), first writing a
// request's typed header (Fields, as the in-process transport delivers a send) as binary
// entries when its keys are one letter each once: one string instead of a map and a string
// per number.
func (c *Command) fieldsToRaw() bool {
	if c.ExtFields != nil {
		return false
	}
	if c.rawExt != "" {
		return true
	}
	if c.Fields == nil || c.Flag&FlagResponse != 0 || !rawSendCode(c.Code) {
		return false
	}
	bp := framePool.Get().(*[]byte)
	defer framePool.Put(bp)
	b := c.Fields.AppendBinary((*bp)[:0])
	*bp = b[:0]
	if len(b) == 0 || !oneLetterKeysOnce(b) {
		return false
	}
	c.rawExt, c.Fields = string(b), nil
	return true
}

var opaqueSeq atomic.Int32

// NextOpaque returns a process-wide unique request id.
func NextOpaque() int32 { return opaqueSeq.Add(1) }

// NewRequest makes a request with a fresh opaque.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	return &Command{Code: code, Language: LanguageGo, Version: ProtocolVersion, Opaque: NextOpaque(),
		ExtFields: ext, Body: body}
}

// NewResponse makes a response with the given code and remark. The transport fills in the opaque
// of the request it answers.
func NewResponse(code int32, remark string) *Command {
	return &Command{Code: code, Language: LanguageGo, Version: ProtocolVersion, Flag: FlagResponse,
		Remark: remark}
}

// NewResponseFor makes a response to req: same opaque and serialization.
func NewResponseFor(req *Command, code int32, remark string) *Command {
	r := NewResponse(code, remark)
	r.Opaque = req.Opaque
	r.Serialize = req.Serialize
	return r
}

// IsResponse reports whether the response bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the sender set the one-way bit.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// MarkOneway sets the one-way bit.
func (c *Command) MarkOneway() { c.Flag |= FlagOneway }

// Ext returns one extension field ("" when absent).
func (c *Command) Ext(key string) string {
	c.Materialize()
	return c.ExtFields[key]
}

// written runs OnWritten once.
func (c *Command) written() {
	if f := c.OnWritten; f != nil {
		c.OnWritten = nil
		f()
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
