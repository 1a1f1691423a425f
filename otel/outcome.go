package otel

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/scriptlock/scriptlock/locker"
)

// acquireOutcome is the outcome of an acquisition that returned err.
func acquireOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeGranted
	case errors.Is(err, locker.ErrNotObtained):
		return OutcomeNotObtained
	}
	return OutcomeError
}

// leaseOutcome is the outcome of an Unlock or Extend that returned err; ok
// is the outcome of success.
func leaseOutcome(err error, ok string) string {
	switch {
	case err == nil:
		return ok
	case errors.Is(err, locker.ErrExpired):
		return OutcomeExpired
	case errors.Is(err, locker.ErrHeldByOther):
		return OutcomeHeldByOther
	}
	return OutcomeError
}

// failed reports whether an outcome is a failure (a span status Error).
func failed(out string) bool {
	switch out {
	case OutcomeGranted, OutcomeNotObtained, OutcomeReleased, OutcomeExtended:
		return false
	}
	return true
}

// lossCause is the AttrLossCause of a loss caused by err.
func lossCause(err error) string {
	switch {
	case errors.Is(err, locker.ErrExpired):
		return "expired"
	case errors.Is(err, locker.ErrHeldByOther):
		return "held_by_other"
	}
	return "other"
}

// errorType is the error.type of err: a name from a short fixed list, a
// Redis error code, or "_OTHER" (the semantic conventions' fallback).
func errorType(err error) string {
	switch {
	case errors.Is(err, locker.ErrExpired):
		return "expired"
	case errors.Is(err, locker.ErrHeldByOther):
		return "held_by_other"
	case errors.Is(err, locker.ErrNotObtained):
		return "not_obtained"
	case errors.Is(err, locker.ErrClosed):
		return "closed"
	case errors.Is(err, locker.ErrInvalidName), errors.Is(err, locker.ErrInvalidTTL),
		errors.Is(err, locker.ErrInvalidOption), errors.Is(err, locker.ErrNilContext),
		errors.Is(err, locker.ErrNilScripter):
		return "invalid_argument"
	case errors.Is(err, locker.ErrUnexpectedReply):
		return "unexpected_reply"
	case errors.Is(err, locker.ErrNoScript):
		return "NOSCRIPT"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	if code := redisCode(err); code != "" {
		return code // before network: a TRYAGAIN reply is not a network error
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return "network"
	}
	return "_OTHER"
}

// redisCode returns the code of a Redis error reply in err ("NOPERM",
// "TRYAGAIN", ...), or "". Messages nest as "locker: acquire script:
// NOPERM ...": the code starts one of the ": "-separated parts.
func redisCode(err error) string {
	for part := range strings.SplitSeq(err.Error(), ": ") {
		code, _, _ := strings.Cut(part, " ")
		if len(code) >= 3 && len(code) <= 32 && code != "EOF" && strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
			return code
		}
	}
	return ""
}

// redact replaces the lock's name, quoted as the core's messages quote it,
// in msg.
func redact(msg, name string) string {
	if name == "" {
		return msg
	}
	return strings.ReplaceAll(msg, strconv.Quote(name), `"<lock>"`)
}
