package servererr

import (
	"errors"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
)

func TestNew(t *testing.T) {
	cause := errors.New("the client's error")
	for _, tc := range []struct{ msg, code string }{
		{"NOSCRIPT No matching script. Please use EVAL.", "NOSCRIPT"},
		{"ERR NOSCRIPT No matching script", "NOSCRIPT"},
		{"NOSCRIPTx", "NOSCRIPTx"},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE"},
		{"LOADING Redis is loading the dataset in memory", "LOADING"},
		{"ERR Protocol error: unauthenticated multibulk length", "NOAUTH"},
		{"Protocol error: unauthenticated bulk length", "NOAUTH"},
		{"ERR unknown command", "ERR"},
	} {
		e := New(tc.msg, cause)
		if e.Code != tc.code || !errors.Is(e, cause) || errors.Is(e, locker.ErrNoScript) != (tc.code == "NOSCRIPT") {
			t.Errorf("New(%q) = %#v (ErrNoScript %v), want code %s wrapping the cause", tc.msg, e, errors.Is(e, locker.ErrNoScript), tc.code)
		}
	}
}
