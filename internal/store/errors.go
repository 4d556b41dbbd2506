package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
)

// LeaseLostError is the ErrLeaseLost of RenewLeases: it names the
// characters whose leases another map took over, so the caller can drop
// exactly those.
type LeaseLostError struct {
	CharacterIDs []string
}

// Error lists the lost characters.
func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("%s: %s", ErrLeaseLost, strings.Join(e.CharacterIDs, ", "))
}

// Unwrap makes errors.Is(err, ErrLeaseLost) true.
func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// wrap names the operation in err and marks every failure to reach the
// database with ErrUnavailable, keeping the cause in the chain.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnavailable):
		return err
	case isUnavailable(err):
		return fmt.Errorf("store: %s: %w: %w", op, ErrUnavailable, err)
	default:
		return fmt.Errorf("store: %s: %w", op, err)
	}
}

// isUnavailable reports whether err means the database could not be
// reached, is not serving, or did not answer in time, as opposed to
// refusing this particular request. A context deadline or cancellation
// counts, in either form: Go's context error, or Postgres' query_canceled
// (57014), which lib/pq returns when it cancels a running statement for a
// context. Either way nothing was done, and the caller may try again.
func isUnavailable(err error) bool {
	for _, target := range []error{
		ErrCommitUnknown, driver.ErrBadConn, sql.ErrConnDone, io.EOF, io.ErrUnexpectedEOF, context.DeadlineExceeded, context.Canceled,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	if pqErr := pq.As(err); pqErr != nil {
		return isUnavailableCode(pqErr.Code)
	}
	return false
}

// isUnavailableCode reports the SQLSTATEs of a server that is going away,
// starting up or out of connections, and of a statement cancelled for its
// deadline.
func isUnavailableCode(code pqerror.Code) bool {
	switch code {
	case pqerror.AdminShutdown, pqerror.CrashShutdown, pqerror.CannotConnectNow, pqerror.TooManyConnections,
		pqerror.QueryCanceled:
		return true
	}
	return code.Class() == pqerror.ClassConnectionException
}

// isRetryable reports the errors a transaction may simply run again for.
func isRetryable(err error) bool {
	return pq.As(err, pqerror.TRSerializationFailure, pqerror.TRDeadlockDetected) != nil
}

// hasCode reports whether err is a Postgres error with that SQLSTATE.
func hasCode(err error, code pqerror.Code) bool {
	return pq.As(err, code) != nil
}
