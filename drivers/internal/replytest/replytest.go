// Package replytest holds what the drivers' FuzzReply targets share: a
// reader that turns fuzz input into reply trees, the expected translation of
// a tree (Want), and Check, which holds a driver's translation to it and to
// the reply vocabulary of locker.Scripter (nil, int64, string, []any).
//
// Only tests import it.
package replytest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
)

// MaxDepth is how deep the decoders nest arrays and maps: a container at
// depth MaxDepth or below is always empty.
const MaxDepth = 4

// Input reads fuzz bytes. Reading past the end yields zeros, so every input
// decodes to some reply and short inputs decode to small ones.
type Input struct{ b []byte }

// NewInput returns an Input reading b.
func NewInput(b []byte) *Input { return &Input{b: b} }

// Byte returns the next byte, or 0 past the end.
func (in *Input) Byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

// Bytes returns a copy of the next n bytes, fewer past the end. It never
// returns nil.
func (in *Input) Bytes(n int) []byte {
	n = min(n, len(in.b))
	p := append(make([]byte, 0, n), in.b[:n]...)
	in.b = in.b[n:]
	return p
}

// Text returns a string of up to 255 bytes: one length byte, then the bytes.
func (in *Input) Text() string { return string(in.Bytes(int(in.Byte()))) }

// Uint64 returns the next 8 bytes big-endian, zero-padded past the end.
func (in *Input) Uint64() uint64 {
	var b [8]byte
	copy(b[:], in.Bytes(8))
	return binary.BigEndian.Uint64(b[:])
}

// Int64 returns Uint64 as a two's-complement int64.
func (in *Input) Int64() int64 { return int64(in.Uint64()) }

// Len returns the element count of a container at depth: 0 to 5, and always
// 0 at depth MaxDepth or below.
func (in *Input) Len(depth int) int {
	if depth >= MaxDepth {
		return 0
	}
	return int(in.Byte() % 6)
}

// errorPrefixes steer error messages towards the cases that matter: NOSCRIPT
// itself, a kvrocks-style "ERR " prefix, and near misses.
var errorPrefixes = []string{"", "NOSCRIPT ", "ERR ", "ERR NOSCRIPT ", "NOSCRIPT", "noscript ", " NOSCRIPT "}

// ErrorText returns a server error message: a prefix chosen by one byte,
// then Text.
func (in *Input) ErrorText() string {
	return errorPrefixes[int(in.Byte())%len(errorPrefixes)] + in.Text()
}

// ErrCheck is one error outcome a reply allows.
type ErrCheck struct {
	Desc string           // what the error must be, for failure messages
	OK   func(error) bool // whether err is that
}

// Unexpected allows an error wrapping locker.ErrUnexpectedReply.
var Unexpected = ErrCheck{"wraps locker.ErrUnexpectedReply", func(err error) bool {
	return errors.Is(err, locker.ErrUnexpectedReply) && !errors.Is(err, locker.ErrNoScript)
}}

// Same allows exactly e, unwrapped and not marked with locker.ErrNoScript.
// The dynamic type of e must be comparable.
func Same(e error) ErrCheck {
	return ErrCheck{fmt.Sprintf("the error %q itself", e), func(err error) bool {
		return err == e && !errors.Is(err, locker.ErrNoScript)
	}}
}

// Server allows a *locker.ServerError that wraps cause, the client's error
// for the reply msg (any error when cause is nil), and that matches locker.ErrNoScript exactly when the
// reply's code (its first word, after a kvrocks-style "ERR ") is NOSCRIPT.
func Server(msg string, cause error) ErrCheck {
	rest := strings.TrimPrefix(msg, "ERR ")
	code, _, _ := strings.Cut(rest, " ")
	noScript := code == "NOSCRIPT"
	return ErrCheck{fmt.Sprintf("a locker.ServerError for %q (NOSCRIPT: %v)", msg, noScript), func(err error) bool {
		var se *locker.ServerError
		return errors.As(err, &se) && (cause == nil || errors.Is(err, cause)) && errors.Is(err, locker.ErrNoScript) == noScript
	}}
}

// Want is the expected outcome of translating one reply: a value, or an
// error meeting one of some checks.
type Want struct {
	val  any // nil, int64, string, []any, unordered or oneOf; only when errs is empty
	errs []ErrCheck
}

// unordered is the translation of a map: key, value pairs flattened in any
// order.
type unordered [][2]any

// oneOf allows any of its values.
type oneOf []any

// Value wants v, which must be nil, int64, string or []any of these.
func Value(v any) Want { return Want{val: v} }

// OneOf wants any of vals (each as for Value).
func OneOf(vals ...any) Want { return Want{val: oneOf(vals)} }

// Fails wants an error meeting one of checks.
func Fails(checks ...ErrCheck) Want { return Want{errs: checks} }

// Failing reports whether w wants an error.
func (w Want) Failing() bool { return len(w.errs) > 0 }

// Array wants the elements translated in order: the first failing element's
// error, else the []any of their values.
func Array(elems []Want) Want {
	vals := make([]any, len(elems))
	for i, e := range elems {
		if e.Failing() {
			return e
		}
		vals[i] = e.val
	}
	return Value(vals)
}

// Map wants key, value pairs translated in some order (a Go map's): if any
// pair fails, the error of one of the failing pairs (its key's, else its
// value's); else the pairs flattened to key, value, key, value ... in any
// order.
func Map(pairs [][2]Want) Want {
	var errs []ErrCheck
	vals := make(unordered, 0, len(pairs))
	for _, p := range pairs {
		switch {
		case p[0].Failing():
			errs = append(errs, p[0].errs...)
		case p[1].Failing():
			errs = append(errs, p[1].errs...)
		default:
			vals = append(vals, [2]any{p[0].val, p[1].val})
		}
	}
	if len(errs) > 0 {
		return Fails(errs...)
	}
	return Value(vals)
}

// Check fails t unless got and err are what w wants. A value must also be
// in the reply vocabulary, and an error must come with a nil value.
func Check(t testing.TB, w Want, got any, err error) {
	t.Helper()
	if w.Failing() {
		if err == nil {
			t.Fatalf("got %#v and no error; want an error that %s", got, describe(w.errs))
		}
		if got != nil {
			t.Fatalf("error %q came with the value %#v", err, got)
		}
		for _, c := range w.errs {
			if c.OK(err) {
				return
			}
		}
		t.Fatalf("error %q (%T); want one that %s", err, err, describe(w.errs))
	}
	if err != nil {
		t.Fatalf("error %q (%T); want %#v", err, err, w.val)
	}
	if verr := Vocabulary(got); verr != nil {
		t.Fatalf("got %#v: %v", got, verr)
	}
	if !match(w.val, got) {
		t.Fatalf("got %#v; want %#v", got, w.val)
	}
}

func describe(checks []ErrCheck) string {
	descs := make([]string, len(checks))
	for i, c := range checks {
		descs[i] = c.Desc
	}
	return strings.Join(descs, ", or ")
}

// Vocabulary returns an error unless v is nil, an int64, a string, or a
// non-nil []any whose elements are all in the vocabulary too.
func Vocabulary(v any) error {
	switch v := v.(type) {
	case nil, int64, string:
		return nil
	case []any:
		if v == nil {
			return errors.New("a nil []any is not the vocabulary's nil")
		}
		for i, e := range v {
			if err := Vocabulary(e); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	default:
		return fmt.Errorf("%T is outside the reply vocabulary (nil, int64, string, []any)", v)
	}
}

// match reports whether got is want, as Check defines it.
func match(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case int64:
		g, ok := got.(int64)
		return ok && g == w
	case string:
		g, ok := got.(string)
		return ok && g == w
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !match(w[i], g[i]) {
				return false
			}
		}
		return true
	case unordered:
		g, ok := got.([]any)
		if !ok || len(g) != 2*len(w) {
			return false
		}
		used := make([]bool, len(w))
	pairs:
		for i := 0; i < len(g); i += 2 {
			for j, p := range w {
				if !used[j] && match(p[0], g[i]) && match(p[1], g[i+1]) {
					used[j] = true
					continue pairs
				}
			}
			return false
		}
		return true
	case oneOf:
		for _, v := range w {
			if match(v, got) {
				return true
			}
		}
		return false
	default:
		panic(fmt.Sprintf("replytest: want of type %T", want))
	}
}

// DoubleText is Redis's rendering of a double, in RESP3 and as RESP2 text:
// printf "%.17g", with inf, -inf and nan.
func DoubleText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
