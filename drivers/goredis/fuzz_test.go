package goredis

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/internal/replytest"
)

// FuzzReply decodes the input into a reply as go-redis hands it over (see
// decodeReply) and checks translate and reply on it: no panic; a value in
// the reply vocabulary equal to the expected translation (expect), or the
// expected error; a server error starting with NOSCRIPT (after go-redis's
// kvrocks "ERR " trim) matches locker.ErrNoScript, no other error does.
// Seeds are in testdata/fuzz/FuzzReply.
func FuzzReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		v := decodeReply(replytest.NewInput(data), 0)
		got, err := translate(v)
		replytest.Check(t, expect(v), got, err)

		// reply gets what Cmd.Result returns: (nil, redis.Nil) for a nil
		// reply, (nil, err) for a failed call, (v, nil) otherwise.
		switch v := v.(type) {
		case nil:
			got, err = reply(nil, redis.Nil)
			replytest.Check(t, replytest.Value(nil), got, err)
		case error:
			got, err = reply(nil, v)
			replytest.Check(t, expectErr(v), got, err)
		default:
			got, err = reply(v, nil)
			replytest.Check(t, expect(v), got, err)
		}
	})
}

// redisErrorType is go-redis's type for server errors (internal/proto's
// RedisError, a string type); redis.ErrNoScript is one.
var redisErrorType = reflect.TypeOf(redis.ErrNoScript)

// serverError returns msg as go-redis's reader returns a server error.
func serverError(msg string) error {
	v := reflect.New(redisErrorType).Elem()
	v.SetString(msg)
	return v.Interface().(error)
}

func TestServerError(t *testing.T) {
	err := serverError("NOSCRIPT x")
	var re redis.Error
	if !errors.As(err, &re) || err.Error() != "NOSCRIPT x" {
		t.Fatalf("serverError gave %#v, not a redis.Error with its message", err)
	}
}

// decodeReply reads one reply value at depth. Tags, one byte mod 12:
//
//	0 nil          4 []any (0-5 elements)   8 map[any]any (0-5 pairs, scalar keys)
//	1 int64 (1 B)  5 server error           9 *big.Int (RESP3 big number)
//	2 int64 (8 B)  6 bool (RESP3)          10 non-server error (errors.New)
//	3 string       7 float64 (RESP3 double) 11 a type go-redis never returns
func decodeReply(in *replytest.Input, depth int) any {
	switch in.Byte() % 12 {
	case 0:
		return nil
	case 1:
		return int64(int8(in.Byte()))
	case 2:
		return in.Int64()
	case 3:
		return in.Text()
	case 4:
		a := make([]any, in.Len(depth))
		for i := range a {
			a[i] = decodeReply(in, depth+1)
		}
		return a
	case 5:
		return serverError(in.ErrorText())
	case 6:
		return in.Byte()&1 == 1
	case 7:
		return math.Float64frombits(in.Uint64())
	case 8:
		// go-redis's reader refuses array and map keys, and a nil or an
		// error as a key fails the whole read; values can be anything.
		m := make(map[any]any)
		for range in.Len(depth) {
			m[decodeKey(in)] = decodeReply(in, depth+1)
		}
		return m
	case 9:
		return decodeBig(in)
	case 10:
		return errors.New(in.ErrorText())
	default:
		switch in.Byte() % 7 {
		case 0:
			return in.Bytes(int(in.Byte())) // go-redis reads bulk strings as string
		case 1:
			return int(int8(in.Byte()))
		case 2:
			return in.Uint64()
		case 3:
			return float32(math.Float64frombits(in.Uint64()))
		case 4:
			return []string{in.Text()}
		case 5:
			return map[string]any{in.Text(): nil}
		default:
			return struct{}{}
		}
	}
}

// decodeKey reads a RESP3 map key: string, int64, float64, bool or *big.Int.
func decodeKey(in *replytest.Input) any {
	switch in.Byte() % 5 {
	case 0:
		return in.Text()
	case 1:
		return int64(int8(in.Byte()))
	case 2:
		return math.Float64frombits(in.Uint64())
	case 3:
		return in.Byte()&1 == 1
	default:
		return decodeBig(in)
	}
}

func decodeBig(in *replytest.Input) *big.Int {
	b := new(big.Int).SetBytes(in.Bytes(int(in.Byte() % 32)))
	if in.Byte()&1 == 1 {
		b.Neg(b)
	}
	return b
}

// expect is the translation of v when it comes nested in a reply, or as the
// value of a successful call: RESP3 types become what RESP2 sends for them,
// a nested error is returned as is, other types are unexpected.
func expect(v any) replytest.Want {
	switch v := v.(type) {
	case nil:
		return replytest.Value(nil)
	case int64:
		return replytest.Value(v)
	case string:
		return replytest.Value(v)
	case bool: // Lua true is 1, false is nil
		if v {
			return replytest.Value(int64(1))
		}
		return replytest.Value(nil)
	case float64:
		return replytest.Value(replytest.DoubleText(v))
	case *big.Int:
		return replytest.Value(v.String())
	case []any:
		elems := make([]replytest.Want, len(v))
		for i, e := range v {
			elems[i] = expect(e)
		}
		return replytest.Array(elems)
	case map[any]any:
		pairs := make([][2]replytest.Want, 0, len(v))
		for k, e := range v {
			pairs = append(pairs, [2]replytest.Want{expect(k), expect(e)})
		}
		return replytest.Map(pairs)
	case error:
		var re redis.Error
		if errors.As(v, &re) {
			return replytest.Fails(replytest.Server(v.Error(), v))
		}
		return replytest.Fails(replytest.Same(v))
	default:
		return replytest.Fails(replytest.Unexpected)
	}
}

// expectErr is what reply makes of a failed call's error.
func expectErr(v error) replytest.Want {
	var re redis.Error
	server := errors.As(v, &re)
	msg := v.Error()
	switch {
	case server && msg == redis.Nil.Error():
		// redis.Nil is itself a server error value: a script error whose
		// message is "redis: nil" equals it, and go-redis's Result reports
		// it as a nil reply too.
		return replytest.Value(nil)
	case server:
		return replytest.Fails(replytest.Server(msg, v))
	default:
		return replytest.Fails(replytest.Same(v))
	}
}
