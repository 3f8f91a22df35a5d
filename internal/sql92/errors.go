package sql92

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// quoteMaxBytes bounds how much of the input an error quotes, so a hostile 16 KiB literal never
// becomes a 16 KiB remark; the quoting keeps the remark valid UTF-8 whatever the input held.
const quoteMaxBytes = 32

// syntaxError is every Compile error: what was wrong, and the byte offset in the source where
// it was found.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string {
	return "sql92: " + e.msg + " at byte " + strconv.Itoa(e.offset)
}

func errorAt(offset int, format string, args ...any) error {
	return &syntaxError{offset: offset, msg: fmt.Sprintf(format, args...)}
}

func quoteText(s string) string {
	if len(s) <= quoteMaxBytes {
		return strconv.Quote(s)
	}
	cut := quoteMaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

func quoteRune(s string) string {
	_, size := utf8.DecodeRuneInString(s)
	return quoteText(s[:size])
}
