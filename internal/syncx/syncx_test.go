package syncx

import (
	"fmt"
	"sync"
	"testing"
)

func TestLogAndBuffer(t *testing.T) {
	var (
		l  Log[int]
		b  Buffer
		wg sync.WaitGroup
	)
	for i := range 8 {
		wg.Go(func() {
			l.Add(i)
			fmt.Fprintf(&b, "%d\n", i)
		})
	}
	wg.Wait()
	got := l.All()
	if len(got) != 8 {
		t.Fatalf("All() has %d values, want 8", len(got))
	}
	got[0] = -1 // a copy: the Log keeps its own
	if l.All()[0] == -1 {
		t.Error("All() returned the Log's own slice")
	}
	if n := len(b.String()); n != 16 {
		t.Errorf("Buffer holds %d bytes, want 16", n)
	}
}
