package boxed

import (
	"strconv"
	"unsafe"
)

// eface is the layout of an interface value with no methods (runtime.eface):
// a type word and a data word that points to the value.
type eface struct {
	typ, data unsafe.Pointer
}

// Ref returns *p as an interface value of type string without copying the
// string header: the value's data word points to *p itself, where boxing
// (any(*p)) would copy the header to a fresh 16-byte allocation. The value
// reads as *p at the time of use, so *p must not change while the value is
// in use; drivers pass such values to their client for one call only, and
// the core never modifies keys or arguments it has passed.
func Ref(p *string) any {
	v := any("") // the string type word; the data word is replaced below
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}

// AppendRefs appends each element of ss to dst as Ref does: it allocates
// nothing but dst's growth. ss must not change while the values are in use.
func AppendRefs(dst []any, ss []string) []any {
	for i := range ss {
		dst = append(dst, Ref(&ss[i]))
	}
	return dst
}

// smallInts are the decimal strings of 0 to len(smallInts)-1, boxed once.
var smallInts = func() (out [32]any) {
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// Int returns n's decimal text as an interface value of type string
// (a key count: EVAL's and EVALSHA's numkeys), without allocating when n is
// small. A string, not an int, because go-redis reads the key count back
// as text to route a command, and formats a non-string with fmt.Sprint.
func Int(n int) any {
	if n >= 0 && n < len(smallInts) {
		return smallInts[n]
	}
	return strconv.Itoa(n)
}
