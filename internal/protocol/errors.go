package protocol

import (
	"errors"
	"fmt"
)

// ProtocolError is an error with a stable Code, the form in which every
// refusal reaches a client (as an ack or an error message). The stutter is
// deliberate: Error is the wire message type in messages.go.
//
//nolint:revive // exported: protocol.Error is taken by the wire message.
type ProtocolError struct {
	Code    Code
	Message string
}

// Error returns "code: message".
func (e *ProtocolError) Error() string {
	return string(e.Code) + ": " + e.Message
}

// Errorf builds a *ProtocolError whose message is formatted like fmt.Sprintf.
func Errorf(code Code, format string, args ...any) *ProtocolError {
	return &ProtocolError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *ProtocolError in err's chain, "" for
// a nil error, and CodeInternal for any other error, so that a server can
// always answer with one of the stable codes.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return CodeInternal
}
