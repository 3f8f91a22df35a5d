package remoting

import (
	"errors"
	"fmt"
)

// Sentinel errors of the remoting layer; compare with errors.Is.
var (
	// ErrMalformedFrame marks every frame that cannot be decoded. The connection it came on is
	// closed, since the byte stream can no longer be trusted.
	ErrMalformedFrame = errors.New("remoting: malformed frame")
	// ErrFrameTooLarge is a frame whose length word exceeds the configured maximum.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrHeaderTooLarge is a frame whose header-length word exceeds the decoder's
	// MaxHeaderBytes; like a malformed frame, it closes the connection.
	ErrHeaderTooLarge = errors.New("remoting: header too large")
	// ErrTooManyExtFields is a header with more extFields entries than the decoder's
	// MaxExtFields; like a malformed frame, it closes the connection.
	ErrTooManyExtFields = errors.New("remoting: too many extFields")
	// ErrTimeout is a request whose response did not arrive in time.
	ErrTimeout = errors.New("remoting: request timed out")
	// ErrClosed is a call on a closed client, server or connection.
	ErrClosed = errors.New("remoting: closed")
	// ErrConnClosed fails the requests pending on a connection that died.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrNoRoute is an in-process call to an address with no local node and no fallback.
	ErrNoRoute = errors.New("remoting: no transport for address")
)

// ResponseError is a response whose code is not the one the caller wanted.
type ResponseError struct {
	Code   int32
	Remark string
}

// Error implements error.
func (e *ResponseError) Error() string {
	if e.Remark == "" {
		return fmt.Sprintf("remoting: response %s (%d)", ResponseCodeName(e.Code), e.Code)
	}
	return fmt.Sprintf("remoting: response %s (%d): %s", ResponseCodeName(e.Code), e.Code, e.Remark)
}

// Retryable reports whether RocketMQ clients retry a send that got this code on another broker.
func (e *ResponseError) Retryable() bool {
	switch e.Code {
	case SystemError, ServiceNotAvailable, NoPermission, TopicNotExist:
		return true
	}
	return false
}

// ErrorFromResponse returns nil when resp has one of the accepted codes (Success when none are
// given), else a *ResponseError.
func ErrorFromResponse(resp *Command, accepted ...int32) error {
	if len(accepted) == 0 {
		if resp.Code == Success {
			return nil
		}
	}
	for _, c := range accepted {
		if resp.Code == c {
			return nil
		}
	}
	return &ResponseError{Code: resp.Code, Remark: resp.Remark}
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformedFrame}, args...)...)
}

func tooManyExtFields(limit int) error {
	return fmt.Errorf("%w: more than MaxExtFields (%d)", ErrTooManyExtFields, limit)
}
