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
// the core never modifies keys or arguments during a call, nor after one
// that returned an error (the client may still be writing it; see
// locker.Scripter: after a reply, the command is sent and done with).
func Ref(p *string) any {
	v := any("") // the string type word; the data word is replaced below
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}

// refInt64 is Ref for an int64.
func refInt64(p *int64) any {
	v := any(int64(0))
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}

// refSlice is Ref for a []any.
func refSlice(p *[]any) any {
	v := any([]any(nil))
	(*eface)(unsafe.Pointer(&v)).data = unsafe.Pointer(p)
	return v
}

// ArrayMax is the longest reply array an Array holds: most of scriptlock's
// scripts reply with two values (a status and a fence, TTL or count), and
// an Array of two fits an 80-byte allocation.
const ArrayMax = 2

// Array builds a reply array of up to ArrayMax elements, the []any of the
// Scripter vocabulary, in one allocation: the slice header, the elements,
// and the int64 values they hold (each of which would otherwise be boxed on
// its own, as would the header when the slice becomes an interface value).
// Make it with NewArray, fill it with Set and SetInt, and take the result
// with Value; after Value it must not be changed.
type Array struct {
	hdr   []any
	elems [ArrayMax]any
	ints  [ArrayMax]int64
}

// NewArray returns an Array of n elements, all nil; n must be at most
// ArrayMax.
func NewArray(n int) *Array {
	a := &Array{}
	a.hdr = a.elems[:n:n]
	return a
}

// Set sets element i to v.
func (a *Array) Set(i int, v any) { a.hdr[i] = v }

// SetInt sets element i to the int64 n, stored in a itself.
func (a *Array) SetInt(i int, n int64) {
	a.ints[i] = n
	a.hdr[i] = refInt64(&a.ints[i])
}

// Value returns the array as an interface value of type []any, with the
// capacity of its length (an append copies it).
func (a *Array) Value() any { return refSlice(&a.hdr) }

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
