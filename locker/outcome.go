package locker

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ServerError is an error reply of the server to a script call, as a
// driver hands it back: the server read the call and answered it. Drivers
// build it from their client's typed server error (see Scripter); the core
// decides from Code alone whether the call ran, never from error text.
type ServerError struct {
	Code string // the reply's first word: "WRONGTYPE", "NOPERM", "LOADING", "MOVED", ...
	Msg  string // the whole reply, code first
	Err  error  // the client's own error, if any: Unwrap returns it
}

// NewServerError returns the ServerError of the error reply msg (as the
// server sent it, code first), wrapping cause (the client's error, or nil).
func NewServerError(msg string, cause error) *ServerError {
	code, _, _ := strings.Cut(msg, " ")
	return &ServerError{Code: code, Msg: msg, Err: cause}
}

// Error returns the reply as the server sent it.
func (e *ServerError) Error() string { return e.Msg }

// Unwrap returns the client's own error.
func (e *ServerError) Unwrap() error { return e.Err }

// Is reports whether a NOSCRIPT reply is matched against ErrNoScript.
func (e *ServerError) Is(target error) bool { return target == ErrNoScript && e.Code == "NOSCRIPT" }

// passing reports whether the reply names a passing state of the server or
// the Cluster: the call did not run, and a later try may pass. MOVED and
// ASK come back when a client gave up following redirections mid-migration.
func (e *ServerError) passing() bool {
	return slices.Contains([]string{"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY", "MOVED", "ASK"}, e.Code)
}

// An outcome is what a script call's error says about whether it ran.
type outcome uint8

const (
	done    outcome = iota // no error: the reply arrived
	refused                // the server answered with an error: the call did not change anything
	passing                // refused by a passing state (LOADING, TRYAGAIN, ...): a later try may pass
	unknown                // the call may have run, may run later or may never run
)

// outcomeOf classifies err, a script call's error. Only a ServerError (or
// a reply the core could not decode) is an answer; an error a driver did
// not mark, a context or network error, an AckError and the error of a
// retried call that had a try with an unknown outcome are unknown.
func outcomeOf(err error) outcome {
	if err == nil {
		return done // before se, whose address escapes: a call that succeeds allocates nothing here
	}
	var se *ServerError
	switch {
	case errors.As(err, new(*unknownError)), errors.Is(err, ErrNotAcknowledged):
		return unknown
	case errors.As(err, &se):
		if se.passing() {
			return passing
		}
		return refused
	case errors.Is(err, ErrUnexpectedReply):
		return refused
	}
	return unknown
}

// answered reports whether err carries the server's answer to the call,
// so that the call did not run and cannot run later.
func answered(err error) bool {
	o := outcomeOf(err)
	return o == refused || o == passing
}

// transient reports whether a later try may cure err: a passing state, or
// a broken or refused connection or a timeout (context.DeadlineExceeded is
// a net.Error too: a call bounded by its own deadline, such as a Quorum
// part's, is tried again while the caller's ctx lives). Its outcome is
// unknown: only the callers of idempotent scripts retry it.
func transient(err error) bool {
	switch outcomeOf(err) {
	case passing:
		return true
	case unknown:
		if errors.As(err, new(*unknownError)) || errors.Is(err, ErrNotAcknowledged) {
			return false
		}
		var ne net.Error
		return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
	}
	return false
}

// unknownError is the error of a retried call whose last try was answered
// (last) after an earlier try whose outcome is unknown (first): the call
// may have taken effect, whatever the last answer said.
type unknownError struct{ last, first error }

func (e *unknownError) Error() string {
	return e.last.Error() + " (an earlier try's outcome is unknown: " + e.first.Error() + ")"
}

func (e *unknownError) Unwrap() []error { return []error{e.last, e.first} }

// retryTransient runs op until it succeeds, fails with an error that is
// not transient, ctx ends, or it gives up, with a doubling pause (5 ms up
// to leaseRetryPause) between tries. Lease operations use it: their
// scripts are idempotent, so a retry after a lost reply is safe. A
// connection failure is tried leaseRetries times; a passing server state
// is retried for up to leaseRetryFor, as long as a client needs to learn a
// Cluster's new shape (rueidis refreshes its slot map up to a second after
// a MOVED reply).
//
// It returns the last try's reply or error, and whether any try's outcome
// was unknown (unsure). An answered error after such a try becomes an
// unknownError: the call's outcome stays unknown.
func (c *Client) retryTransient(ctx context.Context, s *script, op func() (any, error)) (r any, unsure bool, err error) {
	pause := 5 * time.Millisecond
	until := time.Now().Add(leaseRetryFor)
	var first error // the first try whose outcome is unknown
	for try := 1; ; try++ {
		r, err = op()
		o := outcomeOf(err)
		if o == unknown && first == nil {
			first = err
		}
		if err == nil || !transient(err) || ctx.Err() != nil ||
			(o == unknown && try == leaseRetries) || !time.Now().Add(pause).Before(until) {
			break
		}
		c.observe(ctx, Event{Kind: EventRetry, Script: s.name, Err: err})
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, first != nil, carry(err, first)
		case <-t.C:
		}
		pause = min(2*pause, leaseRetryPause)
	}
	return r, first != nil, carry(err, first)
}

// carry returns err, the last try's error, as an unknownError when it was
// answered after a try whose outcome, first, is unknown.
func carry(err, first error) error {
	if err == nil || first == nil || !answered(err) {
		return err
	}
	return &unknownError{last: err, first: first}
}

// leaseRetries bounds the tries of one Unlock, Extend or TTL call (and of
// the other calls that use retryTransient) after connection failures;
// leaseRetryFor bounds them in time after passing server states, and
// leaseRetryPause caps the pause between two tries.
const (
	leaseRetries    = 4
	leaseRetryFor   = 2 * time.Second
	leaseRetryPause = 200 * time.Millisecond
)
