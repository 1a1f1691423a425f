package rueidis

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/drivers/internal/replytest"
)

// FuzzReply decodes the input into a RESP2/RESP3 message tree (see
// decodeReply), builds the rueidis.RedisMessage for it and checks translate
// and reply on it: no panic; a value in the reply vocabulary equal to the
// expected translation (expect), or the expected error; a server error
// starting with NOSCRIPT (after rueidis's kvrocks "ERR " trim) matches
// locker.ErrNoScript, no other error does. Seeds are in
// testdata/fuzz/FuzzReply.
func FuzzReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m := decodeReply(replytest.NewInput(data), 0)
		rm := m.message(t)
		got, err := translate(&rm)
		replytest.Check(t, expect(m), got, err)

		if m.transport {
			e := errors.New(m.str)
			got, err = reply(rueidis.NewErrorResult(e))
			replytest.Check(t, replytest.Fails(replytest.Same(e)), got, err)
			return
		}
		got, err = reply(rueidis.NewResult(rm, nil))
		replytest.Check(t, expectTop(m), got, err)
	})
}

// RESP type bytes, as rueidis stores them in RedisMessage.
const (
	typeBlobString     = '$'
	typeSimpleString   = '+'
	typeSimpleErr      = '-'
	typeInteger        = ':'
	typeNull           = '_'
	typeFloat          = ','
	typeBool           = '#'
	typeBlobErr        = '!'
	typeVerbatimString = '='
	typeBigNumber      = '('
	typeArray          = '*'
	typeMap            = '%'
	typeSet            = '~'
)

// msg is one RESP message as rueidis holds it: typ and, by type, num
// (integers, booleans, nulls), str (strings, errors, doubles, big numbers)
// or kids (arrays, sets, and maps as key, value, key, value ...).
type msg struct {
	typ       byte
	num       int64
	str       string
	kids      []msg
	transport bool // at the top: a client-side failure with message str, not a reply
}

// message builds the rueidis.RedisMessage for m. rueidis exports no
// constructor for messages (its mock helpers are a separate module), so
// message writes m in the format of RedisMessage.CacheMarshal (a 7-byte TTL,
// then per message its type byte, an 8-byte big-endian integer, count or
// length, and the children or the bytes) and reads it back with
// CacheUnmarshalView. That format is not stable across rueidis versions:
// message fails the test if CacheMarshal no longer writes the same bytes.
func (m msg) message(t *testing.T) rueidis.RedisMessage {
	buf := m.appendCache(make([]byte, 7, 64))
	var rm rueidis.RedisMessage
	if err := rm.CacheUnmarshalView(buf); err != nil {
		t.Fatalf("CacheUnmarshalView: %v", err)
	}
	if again := rm.CacheMarshal(nil); !bytes.Equal(again, buf) {
		t.Fatalf("rueidis's cache format changed: wrote %q, CacheMarshal gives %q; update msg.appendCache", buf, again)
	}
	return rm
}

func (m msg) appendCache(b []byte) []byte {
	b = append(b, m.typ)
	switch m.typ {
	case typeInteger, typeNull, typeBool:
		return binary.BigEndian.AppendUint64(b, uint64(m.num))
	case typeArray, typeMap, typeSet:
		b = binary.BigEndian.AppendUint64(b, uint64(len(m.kids)))
		for _, k := range m.kids {
			b = k.appendCache(b)
		}
		return b
	default:
		b = binary.BigEndian.AppendUint64(b, uint64(len(m.str)))
		return append(b, m.str...)
	}
}

// otherTypes are type bytes translate has no case for: push, attribute,
// end, chunk (rueidis never leaves these in a reply) and unknown ones.
var otherTypes = []byte{'>', '|', '.', ';', 0, 'x'}

// decodeReply reads one message at depth. Tags, one byte mod 16:
//
//	0 null          4 simple string   8 double          12 verbatim string
//	1 int (1 B)     5 array (0-5)     9 map (0-5 pairs) 13 blob error
//	2 int (8 B)     6 simple error   10 set (0-5)       14 another type (otherTypes)
//	3 blob string   7 boolean        11 big number      15 client-side error (at the top)
func decodeReply(in *replytest.Input, depth int) msg {
	switch in.Byte() % 16 {
	case 0:
		return msg{typ: typeNull}
	case 1:
		return msg{typ: typeInteger, num: int64(int8(in.Byte()))}
	case 2:
		return msg{typ: typeInteger, num: in.Int64()}
	case 3:
		return msg{typ: typeBlobString, str: in.Text()}
	case 4:
		return msg{typ: typeSimpleString, str: in.Text()}
	case 5:
		return msg{typ: typeArray, kids: decodeKids(in, depth, in.Len(depth))}
	case 6:
		return msg{typ: typeSimpleErr, str: in.ErrorText()}
	case 7:
		return msg{typ: typeBool, num: int64(in.Byte() & 1)}
	case 8:
		return msg{typ: typeFloat, str: replytest.DoubleText(math.Float64frombits(in.Uint64()))}
	case 9:
		n := in.Len(depth)
		kids := make([]msg, 0, 2*n)
		for range n {
			kids = append(kids, decodeKey(in), decodeReply(in, depth+1))
		}
		return msg{typ: typeMap, kids: kids}
	case 10:
		return msg{typ: typeSet, kids: decodeKids(in, depth, in.Len(depth))}
	case 11:
		b := new(big.Int).SetBytes(in.Bytes(int(in.Byte() % 32)))
		if in.Byte()&1 == 1 {
			b.Neg(b)
		}
		return msg{typ: typeBigNumber, str: b.String()}
	case 12:
		return msg{typ: typeVerbatimString, str: [2]string{"txt:", "mkd:"}[in.Byte()&1] + in.Text()}
	case 13:
		return msg{typ: typeBlobErr, str: in.ErrorText()}
	case 14:
		return msg{typ: otherTypes[int(in.Byte())%len(otherTypes)], str: in.Text()}
	default:
		// Nested, it is just a message of an unknown type.
		return msg{typ: 0, str: in.ErrorText(), transport: depth == 0}
	}
}

func decodeKids(in *replytest.Input, depth, n int) []msg {
	kids := make([]msg, n)
	for i := range kids {
		kids[i] = decodeReply(in, depth+1)
	}
	return kids
}

// decodeKey reads a map key: mostly strings, as Lua tables with string keys
// give, sometimes an integer (a Lua table with number keys).
func decodeKey(in *replytest.Input) msg {
	switch in.Byte() % 4 {
	case 0, 1:
		return msg{typ: typeBlobString, str: in.Text()}
	case 2:
		return msg{typ: typeSimpleString, str: in.Text()}
	default:
		return msg{typ: typeInteger, num: int64(int8(in.Byte()))}
	}
}

// expect is the translation of m when it comes nested in a reply: RESP3
// types become what RESP2 sends for them, a nested error is returned as
// rueidis reports it, other types are unexpected.
func expect(m msg) replytest.Want {
	switch m.typ {
	case typeNull:
		return replytest.Value(nil)
	case typeInteger:
		return replytest.Value(m.num)
	case typeBlobString, typeSimpleString, typeFloat, typeBigNumber:
		return replytest.Value(m.str)
	case typeVerbatimString:
		// RESP2 sends the text without its "txt:" format prefix, as
		// go-redis returns it.
		return replytest.Value(m.str[4:])
	case typeBool: // Lua true is 1, false is nil
		if m.num == 1 {
			return replytest.Value(int64(1))
		}
		return replytest.Value(nil)
	case typeArray, typeSet:
		elems := make([]replytest.Want, len(m.kids))
		for i, k := range m.kids {
			elems[i] = expect(k)
		}
		return replytest.Array(elems)
	case typeMap:
		return expectMap(m.kids)
	case typeSimpleErr, typeBlobErr:
		return replytest.Fails(wantServerErr(m.str))
	default:
		return replytest.Fails(replytest.Unexpected)
	}
}

// expectMap is the translation of a map's key, value, ... list: the pairs
// in some order, a later value of a repeated key replacing the earlier one.
func expectMap(kids []msg) replytest.Want {
	last := make(map[string]int) // key -> index of its last pair
	for i := 0; i < len(kids); i += 2 {
		if k := kids[i]; k.typ != typeBlobString && k.typ != typeSimpleString {
			// rueidis's ToMap takes string keys only: such a map is an
			// unexpected reply.
			return replytest.Fails(replytest.Unexpected)
		}
		last[kids[i].str] = i
	}
	pairs := make([][2]replytest.Want, 0, len(last))
	for k, i := range last {
		pairs = append(pairs, [2]replytest.Want{replytest.Value(k), expect(kids[i+1])})
	}
	return replytest.Map(pairs)
}

// wantServerErr allows the locker.ServerError for a server error with message
// msg (rueidis trims a kvrocks-style "ERR " prefix), wrapping rueidis's
// *RedisError.
func wantServerErr(msg string) replytest.ErrCheck {
	msg = strings.TrimPrefix(msg, "ERR ")
	c := replytest.Server(msg, nil)
	return replytest.ErrCheck{Desc: c.Desc + " from a *rueidis.RedisError", OK: func(err error) bool {
		var re *rueidis.RedisError
		return c.OK(err) && errors.As(err, &re) && re.Error() == msg
	}}
}

// expectTop is what reply makes of a call whose reply is m.
func expectTop(m msg) replytest.Want {
	switch m.typ {
	case typeSimpleErr, typeBlobErr:
		return replytest.Fails(wantServerErr(m.str))
	default:
		return expect(m)
	}
}
