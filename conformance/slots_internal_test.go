package conformance

import (
	"testing"
	"time"
)

// TestSlotsMostLeftFirst checks the exclusive cases' semaphore: once its
// slots are taken, a released slot goes to the waiter with the most cases
// left, then to the next, and a slot nobody waits for is free again.
func TestSlotsMostLeftFirst(t *testing.T) {
	s := newSlots(1)
	s.acquire(1)
	got := make(chan int, 3)
	for _, left := range []int{2, 9, 5} {
		go func() {
			s.acquire(left)
			got <- left
		}()
		// Queued in this order: 2 first, so a FIFO would serve it first.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			s.mu.Lock()
			n := len(s.waiting)
			queued := n > 0 && s.waiting[n-1].left == left
			s.mu.Unlock()
			if queued {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the waiter with %d left did not queue", left)
			}
		}
	}
	for _, want := range []int{9, 5, 2} {
		s.release()
		select {
		case left := <-got:
			if left != want {
				t.Fatalf("a released slot went to the waiter with %d left, want %d", left, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("a released slot went to nobody; want the waiter with %d left", want)
		}
	}
	if s.tryAcquire() {
		t.Fatal("tryAcquire took a slot while every slot is held")
	}
	s.release()
	if !s.tryAcquire() {
		t.Fatal("tryAcquire found no slot after the last waiter's was released")
	}
	s.release()
	s.acquire(1) // free again: does not block
	if s.free != 0 || len(s.waiting) != 0 {
		t.Fatalf("after the last acquire: %d free, %d waiting; want 0 and 0", s.free, len(s.waiting))
	}
}

// TestKeySlot checks keySlot against slots Redis reports (CLUSTER KEYSLOT)
// and the CRC-16/XMODEM check value of "123456789" (0x31C3).
func TestKeySlot(t *testing.T) {
	for tag, want := range map[string]uint16{"123456789": 0x31C3, "foo": 12182, "bar": 5061, "hello": 866, "": 0} {
		if got := keySlot(tag); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", tag, got, want)
		}
	}
}
