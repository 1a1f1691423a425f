package valkeygo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/locker"
)

// FuzzReply decodes the input into a RESP2/RESP3 message tree (see
// decode), builds the valkey.ValkeyMessage for it and checks reply on it:
// no panic; a value of the Scripter vocabulary (nil, int64, string, []any)
// equal to the expected translation (want), or an error; an error reply
// whose message starts with NOSCRIPT (after valkey-go's "ERR " trim)
// matches locker.ErrNoScript, and no other error does.
func FuzzReply(f *testing.F) {
	for _, seed := range []string{"", "\x01\x07", "\x03\x02ok", "\x05\x03\x01\x01\x00\x04\x01x", "\x06\x08NOSCRIPT", "\x06\x03ERR", "\x07\x01", "\x08\x01\x03\x01k\x01\x05", "\x09\x021.5", "\x0a\x01\x01\x02", "\x0b\x02txt:hi", "\x0c\x05\x0a\x0b\x0c\x0d\x0e"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &input{b: data}
		m := decode(in, 0)
		vm := m.message(t)
		got, err := reply(valkey.NewResult(vm, nil))
		want, wantErr := m.want()
		isNoScript := m.typ == '-' && isNoScriptReply(strings.TrimPrefix(m.str, "ERR "))
		switch {
		case err != nil:
			if !wantErr {
				t.Fatalf("reply(%s) failed: %v; want %#v", vm.String(), err, want)
			}
			var se *locker.ServerError
			if m.typ == '-' && !errors.As(err, &se) {
				t.Fatalf("reply(%s) = %v, want a locker.ServerError", vm.String(), err)
			}
			if errors.Is(err, locker.ErrNoScript) != isNoScript {
				t.Fatalf("reply(%s): errors.Is(%v, ErrNoScript) = %v, want %v", vm.String(), err, !isNoScript, isNoScript)
			}
		case wantErr:
			t.Fatalf("reply(%s) = %#v, want an error", vm.String(), got)
		default:
			if !inVocabulary(got) {
				t.Fatalf("reply(%s) = %#v: outside the Scripter vocabulary", vm.String(), got)
			}
			if !m.hasMap() { // a map's pairs come in any order: shape checked only
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("reply(%s) = %#v, want %#v", vm.String(), got, want)
				}
			}
		}
	})
}

// input reads fuzz bytes; past the end it yields zeros.
type input struct{ b []byte }

func (in *input) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *input) text() string {
	n := min(int(in.byte()%16), len(in.b))
	s := string(in.b[:n])
	in.b = in.b[n:]
	return s
}

// msg is one RESP message as valkey-go holds it: typ and, by type, num
// (integers, booleans, nulls), str (strings, errors, doubles) or kids
// (arrays, sets, and maps as key, value, key, value ...).
type msg struct {
	typ  byte
	num  int64
	str  string
	kids []msg
}

// decode reads one message at depth; a tag byte mod 13 picks its type.
func decode(in *input, depth int) msg {
	kids := func(pairs bool) []msg {
		n := 0
		if depth < 3 {
			n = int(in.byte() % 4)
		}
		var ks []msg
		for range n {
			if pairs {
				ks = append(ks, msg{typ: '$', str: in.text()})
			}
			ks = append(ks, decode(in, depth+1))
		}
		return ks
	}
	switch in.byte() % 13 {
	case 0:
		return msg{typ: '_'}
	case 1:
		return msg{typ: ':', num: int64(int8(in.byte())) << (in.byte() % 56)}
	case 2:
		return msg{typ: '$', str: in.text()}
	case 3:
		return msg{typ: '+', str: in.text()}
	case 4, 12:
		return msg{typ: '*', kids: kids(false)}
	case 5:
		return msg{typ: '-', str: in.text()}
	case 6:
		return msg{typ: '#', num: int64(in.byte() & 1)}
	case 7:
		return msg{typ: '%', kids: kids(true)}
	case 8:
		return msg{typ: ',', str: strconv.FormatFloat(float64(int8(in.byte()))/4, 'g', -1, 64)}
	case 9:
		return msg{typ: '~', kids: kids(false)}
	case 10:
		return msg{typ: '(', str: strconv.Itoa(int(int8(in.byte()))) + "0000000000000000000000"}
	default:
		return msg{typ: '=', str: "txt:" + in.text()}
	}
}

// want is what reply makes of m: RESP3 types as RESP2 sends them; an error
// reply anywhere fails the call. A map's want is nil (hasMap).
func (m msg) want() (any, bool) {
	switch m.typ {
	case '_':
		return nil, false
	case ':':
		return m.num, false
	case '$', '+', ',', '(':
		return m.str, false
	case '=':
		return m.str[4:], false
	case '#':
		if m.num == 1 {
			return int64(1), false
		}
		return nil, false
	case '-':
		return nil, true
	}
	if m.typ == '%' {
		// valkey-go's ToMap keeps a repeated key's last value.
		last := map[string]msg{}
		for i := 0; i+1 < len(m.kids); i += 2 {
			last[m.kids[i].str] = m.kids[i+1]
		}
		for _, v := range last {
			if _, err := v.want(); err {
				return nil, true
			}
		}
		return nil, false
	}
	var out []any
	for _, k := range m.kids {
		v, err := k.want()
		if err {
			return nil, true
		}
		out = append(out, v)
	}
	if out == nil {
		out = []any{}
	}
	return out, false
}

// hasMap reports whether m is or holds a map.
func (m msg) hasMap() bool {
	if m.typ == '%' {
		return true
	}
	for _, k := range m.kids {
		if k.hasMap() {
			return true
		}
	}
	return false
}

// message builds the valkey.ValkeyMessage for m. valkey-go exports no
// constructor for messages, so message writes m in the format of
// ValkeyMessage.CacheMarshal (a 7-byte TTL, then per message its type
// byte, an 8-byte big-endian integer, count or length, and the children or
// the bytes) and reads it back with CacheUnmarshalView; it fails the test
// if CacheMarshal no longer writes the same bytes.
func (m msg) message(t *testing.T) valkey.ValkeyMessage {
	buf := m.appendCache(make([]byte, 7, 64))
	var vm valkey.ValkeyMessage
	if err := vm.CacheUnmarshalView(buf); err != nil {
		t.Fatalf("CacheUnmarshalView: %v", err)
	}
	if again := vm.CacheMarshal(nil); !bytes.Equal(again, buf) {
		t.Fatalf("valkey-go's cache format changed: wrote %q, CacheMarshal gives %q", buf, again)
	}
	return vm
}

func (m msg) appendCache(b []byte) []byte {
	b = append(b, m.typ)
	switch m.typ {
	case ':', '_', '#':
		return binary.BigEndian.AppendUint64(b, uint64(m.num))
	case '*', '%', '~':
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

// inVocabulary reports whether v is nil, int64, string or []any of these.
func inVocabulary(v any) bool {
	switch v := v.(type) {
	case nil, int64, string:
		return true
	case []any:
		for _, e := range v {
			if !inVocabulary(e) {
				return false
			}
		}
		return true
	}
	return false
}

// isNoScriptReply reports whether an error reply, as valkey-go hands it
// over, is NOSCRIPT: its code (first word, after a kvrocks-style "ERR ") is.
func isNoScriptReply(msg string) bool {
	code, _, _ := strings.Cut(strings.TrimPrefix(msg, "ERR "), " ")
	return code == "NOSCRIPT"
}
