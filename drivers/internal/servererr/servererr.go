// Package servererr builds the locker.ServerError of a server's error
// reply, the same way in every driver: each driver finds the reply through
// its client's own error type and hands its text here.
package servererr

import (
	"strings"

	"github.com/scriptlock/scriptlock/locker"
)

// New returns the locker.ServerError of the error reply msg, wrapping
// cause (the client's error). A kvrocks-style "ERR NOSCRIPT ..." is a
// NOSCRIPT reply. Redis answers a client that has not authenticated with
// "ERR Protocol error: unauthenticated multibulk length" (more than 10
// arguments) or "... bulk length" (one longer than 16 KiB) instead of
// NOAUTH, and closes the connection: New names it NOAUTH, as what it
// means. (rueidis and valkey-go drop the "ERR " before msg gets here.)
func New(msg string, cause error) *locker.ServerError {
	rest := strings.TrimPrefix(msg, "ERR ")
	switch {
	case strings.HasPrefix(rest, "Protocol error: unauthenticated"):
		return &locker.ServerError{Code: "NOAUTH", Msg: "NOAUTH Authentication required (the client did not authenticate; set its password): " + msg, Err: cause}
	case rest != msg && locker.NewServerError(rest, nil).Code == "NOSCRIPT":
		return &locker.ServerError{Code: "NOSCRIPT", Msg: msg, Err: cause}
	}
	return locker.NewServerError(msg, cause)
}
