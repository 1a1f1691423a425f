package redigo

import (
	"errors"
	"math"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/scriptlock/scriptlock/drivers/internal/replytest"
)

// FuzzReply decodes the input into a reply as redigo hands it over (see
// decodeReply) and checks translate and translateErr on it: no panic; a
// value in the reply vocabulary equal to the expected translation (expect),
// or the expected error; a server error (redis.Error) starting with NOSCRIPT
// matches locker.ErrNoScript, no other error does. Seeds are in
// testdata/fuzz/FuzzReply.
func FuzzReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		v := decodeReply(replytest.NewInput(data), 0)
		got, err := translate(v)
		replytest.Check(t, expect(v), got, err)

		// Do returns a server error reply as its error, and eval hands any
		// error to translateErr.
		if e, ok := v.(error); ok {
			replytest.Check(t, expectErr(e), nil, translateErr(e))
		}
	})
}

// decodeReply reads one reply value at depth. Tags, one byte mod 9:
//
//	0 nil          3 []byte (bulk string)     6 server error (redis.Error)
//	1 int64 (1 B)  4 string (status reply)    7 non-server error (errors.New)
//	2 int64 (8 B)  5 []any (0-5 elements)     8 a type redigo never returns
func decodeReply(in *replytest.Input, depth int) any {
	switch in.Byte() % 9 {
	case 0:
		return nil
	case 1:
		return int64(int8(in.Byte()))
	case 2:
		return in.Int64()
	case 3:
		return in.Bytes(int(in.Byte()))
	case 4:
		return in.Text()
	case 5:
		a := make([]any, in.Len(depth))
		for i := range a {
			a[i] = decodeReply(in, depth+1)
		}
		return a
	case 6:
		return redis.Error(in.ErrorText())
	case 7:
		return errors.New(in.ErrorText())
	default:
		switch in.Byte() % 7 {
		case 0:
			return int(int8(in.Byte()))
		case 1:
			return in.Uint64()
		case 2:
			return math.Float64frombits(in.Uint64())
		case 3:
			return in.Byte()&1 == 1
		case 4:
			return []string{in.Text()}
		case 5:
			return map[any]any{in.Text(): nil}
		default:
			return struct{}{}
		}
	}
}

// expect is the translation of v when it comes nested in a reply, or as the
// value of a successful call: bulk strings become strings, a nested server
// error is returned as is, other types are unexpected.
func expect(v any) replytest.Want {
	switch v := v.(type) {
	case nil:
		return replytest.Value(nil)
	case int64:
		return replytest.Value(v)
	case []byte:
		return replytest.Value(string(v))
	case string:
		return replytest.Value(v)
	case []any:
		elems := make([]replytest.Want, len(v))
		for i, e := range v {
			elems[i] = expect(e)
		}
		return replytest.Array(elems)
	case redis.Error:
		return replytest.Fails(replytest.Server(string(v), v))
	default:
		return replytest.Fails(replytest.Unexpected)
	}
}

// expectErr is what translateErr makes of a failed call's error: a
// server error becomes a locker.ServerError, others pass unchanged.
func expectErr(v error) replytest.Want {
	var re redis.Error
	if errors.As(v, &re) {
		return replytest.Fails(replytest.Server(string(re), v))
	}
	return replytest.Fails(replytest.Same(v))
}
