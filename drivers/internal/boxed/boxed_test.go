package boxed

import (
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
