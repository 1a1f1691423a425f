package boxed

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

func TestBoxOnce(t *testing.T) {
	var c Cache
	s := "f00d" + strconv.Itoa(1) // not a constant: boxing it allocates
	if got := c.Box(s); got != s {
		t.Fatalf("Box(%q) = %v", s, got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.Box(s) }); n != 0 {
		t.Errorf("Box of a cached string allocates %v times, want 0", n)
	}
}

func TestBoxBounded(t *testing.T) {
	var c Cache
	for i := range Max + 10 {
		s := strconv.Itoa(i)
		if got := c.Box(s); got != s {
			t.Fatalf("Box(%q) = %v", s, got)
		}
	}
	if n := len(*c.m.Load()); n != Max {
		t.Errorf("cache holds %d strings, want at most %d", n, Max)
	}
}

func TestBoxConcurrent(t *testing.T) {
	var c Cache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				s := strconv.Itoa(g*100 + i%5)
				if got := c.Box(s); got != s {
					t.Errorf("Box(%q) = %v", s, got)
				}
			}
		}()
	}
	wg.Wait()
}

func TestRef(t *testing.T) {
	ss := []string{"", "a", "f00d" + strconv.Itoa(42), string(make([]byte, 5000))}
	var dst []any
	dst = AppendRefs(dst, ss)
	for i, v := range dst {
		s, ok := v.(string)
		if !ok || s != ss[i] || v != any(ss[i]) {
			t.Errorf("AppendRefs element %d = %#v, want %q", i, v, ss[i])
		}
	}
	buf := make([]any, 0, 8)
	if n := testing.AllocsPerRun(100, func() { buf = AppendRefs(buf[:0], ss) }); n != 0 {
		t.Errorf("AppendRefs allocates %v times, want 0", n)
	}
}

// TestRefGC checks that a Ref keeps its string alive on its own: the only
// reference to the backing array left is the interface value.
func TestRefGC(t *testing.T) {
	refs := make([]any, 0, 100)
	for i := range 100 {
		ss := []string{"key-" + strconv.Itoa(i)}
		refs = append(refs, Ref(&ss[0]))
	}
	runtime.GC()
	runtime.GC()
	_ = make([]byte, 1<<20) // reuse freed memory, if any were freed
	for i, v := range refs {
		if want := "key-" + strconv.Itoa(i); v != any(want) {
			t.Fatalf("ref %d = %#v after GC, want %q", i, v, want)
		}
	}
}

func TestInt(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 31, 32, 123, 4096} {
		if got, want := Int(n), any(strconv.Itoa(n)); got != want {
			t.Errorf("Int(%d) = %#v, want %#v", n, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Int(7) }); n != 0 {
		t.Errorf("Int(7) allocates %v times, want 0", n)
	}
}

func TestArray(t *testing.T) {
	var v any
	n := testing.AllocsPerRun(100, func() {
		a := NewArray(2)
		a.SetInt(0, 1764160000123456)
		a.Set(1, "x")
		v = a.Value()
	})
	if n != 1 {
		t.Errorf("an Array of 2 allocates %v times, want 1", n)
	}
	runtime.GC()
	got, ok := v.([]any)
	if !ok || len(got) != 2 || cap(got) != 2 || got[0] != any(int64(1764160000123456)) || got[1] != any("x") {
		t.Fatalf("Array value = %#v", v)
	}
	if x, ok := got[0].(int64); !ok || x != 1764160000123456 {
		t.Errorf("element 0 = %#v", got[0])
	}
	if s := fmt.Sprint(v); s != "[1764160000123456 x]" {
		t.Errorf("Sprint = %s", s)
	}
}
