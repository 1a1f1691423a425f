// Package boxed keeps strings that are sent again and again (script SHA-1s)
// boxed as command arguments, so that a driver whose client takes []any
// does not allocate a new interface value for them on every call.
package boxed

import "sync/atomic"

// Cache maps a string to its boxed value. The zero value is ready to use
// and safe for concurrent use. Lookups take no lock: the map is replaced,
// never changed, when a string is first boxed.
type Cache struct {
	m atomic.Pointer[map[string]any]
}

// Max bounds the strings a Cache keeps (scriptlock has fewer scripts); past
// it, Box boxes afresh on every call.
const Max = 64

// Box returns s as an interface value, the same one on every call.
func (c *Cache) Box(s string) any {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[s]; ok {
			return v
		}
	}
	for {
		old := c.m.Load()
		m := make(map[string]any)
		if old != nil {
			if len(*old) >= Max {
				return s
			}
			for k, v := range *old {
				m[k] = v
			}
		}
		v := any(s)
		m[s] = v
		if c.m.CompareAndSwap(old, &m) {
			return v
		}
	}
}
