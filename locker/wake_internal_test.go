package locker

// The wake hub (wake.go): a message wakes every waiter that asked for all
// messages and one waiter woken alone; a waiter woken alone that leaves
// without using its wake-up hands it on.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subScripter is a Scripter whose Subscribe keeps the handler, so a test
// can deliver messages.
type subScripter struct {
	Scripter
	mu sync.Mutex
	on func(string)
}

func (s *subScripter) Subscribe(_ context.Context, _ string, on func(string)) (func(), error) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
	return func() {}, nil
}

func (s *subScripter) publish() { s.send("") }

// send delivers a message with payload.
func (s *subScripter) send(payload string) {
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	on(payload)
}

// pending reports which of ws hold a wake-up, and takes it.
func pending(ws ...<-chan struct{}) []bool {
	got := make([]bool, len(ws))
	for i, w := range ws {
		select {
		case <-w:
			got[i] = true
		default:
		}
	}
	return got
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestWakeOneAlone(t *testing.T) {
	s := &subScripter{}
	c, err := New(s, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	var alone []<-chan struct{}
	var leaves []func(bool)
	for range 3 {
		w, leave := c.joinWake(ctx, "ch", true)
		require.NotNil(t, w)
		alone, leaves = append(alone, w), append(leaves, leave)
	}
	all, leaveAll := c.joinWake(ctx, "ch", false)
	defer leaveAll(false)

	s.publish()
	assert.Equal(t, 1, count(pending(alone...)), "one message wakes one waiter woken alone")
	assert.Equal(t, []bool{true}, pending(all), "and every waiter woken by every message")

	// Two messages before anyone takes theirs: two waiters, not one twice.
	s.publish()
	s.publish()
	got := pending(alone...)
	assert.Equal(t, 2, count(got), "two messages wake two waiters woken alone")

	// A waiter leaving with a pending wake-up hands it on.
	s.publish()
	var holder int
	for i, w := range alone {
		if len(w) == 1 {
			holder = i
		}
	}
	leaves[holder](false)
	var rest []<-chan struct{}
	for i, w := range alone {
		if i != holder {
			rest = append(rest, w)
		}
	}
	assert.Equal(t, 1, count(pending(rest...)), "a pending wake-up is handed on when its waiter leaves")

	// A waiter that used its wake-up but could not try hands it on too.
	leaves[(holder+1)%3](true)
	last := alone[(holder+2)%3]
	assert.Equal(t, []bool{true}, pending(last), "handOn wakes the remaining waiter")
	leaves[(holder+2)%3](false)
}

// TestWakeHanded checks that a waiter that takes payloads (its own
// channel's) gets a message's payload before its wake-up, and no empty
// one, while the other waiters are woken as before.
func TestWakeHanded(t *testing.T) {
	s := &subScripter{}
	c, err := New(s, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	var got []string
	me := make(chan struct{}, 1)
	w, leave := c.joinWakeInto(ctx, "ch:w", waker{handed: func(p string) {
		got = append(got, p)
		assert.Zero(t, len(me), "the payload comes before the wake-up")
	}}, me)
	require.NotNil(t, w)
	defer leave(false)
	other, leaveOther := c.joinWake(ctx, "ch:w", false)
	defer leaveOther(false)

	s.send("1700000000123456")
	assert.Equal(t, []string{"1700000000123456"}, got, "the payload is handed over")
	assert.Equal(t, []bool{true, true}, pending(w, other), "and both waiters are woken")
	s.send("") // a spurious call: a wake-up, no payload
	assert.Equal(t, []string{"1700000000123456"}, got, "an empty payload is not handed over")
	assert.Equal(t, []bool{true, true}, pending(w, other))
}

// TestHanded checks when a waiter may take a grant from its wake-up: only
// its own (by waiter id), after a refusal that carried the server's time,
// with a later fence, and while that refusal's call started within the
// margin.
func TestHanded(t *testing.T) {
	refused := fmt.Errorf("%w: x", ErrNotObtained)
	h := handed{id: "slot.2"}
	h.note("1000:slot.2")
	f, _ := h.take(time.Second)
	assert.Zero(t, f, "no refusal yet")

	start := time.Now()
	h.after(start, 2000, refused)
	f, _ = h.take(time.Second)
	assert.Zero(t, f, "a fence before the refusal: a late wake-up of an earlier grant")
	h.note("junk")
	h.note("-5:slot.2")
	h.note("9000:slot.1") // the slot's earlier waiter's
	h.note("9000")        // no id
	h.note("3000:slot.2")
	h.note("2500:slot.2") // an older one does not replace it
	f, from := h.take(time.Second)
	assert.Equal(t, int64(3000), f, "a grant after the refusal")
	assert.Equal(t, start, from, "valid from the refused call's start")
	f, _ = h.take(0)
	assert.Zero(t, f, "not once the refused call started longer ago than the margin")

	h.after(time.Now(), 0, refused)
	f, _ = h.take(time.Second)
	assert.Zero(t, f, "a refusal without the server's time")
	h.after(time.Now(), 2500, errors.New("broken pipe"))
	f, _ = h.take(time.Second)
	assert.Zero(t, f, "a call whose outcome is unknown")
	h.after(time.Now(), 4000, refused)
	f, _ = h.take(time.Second)
	assert.Zero(t, f, "a refusal after the grant: the grant is gone")
}

// countSubScripter counts subscriptions that are live.
type countSubScripter struct {
	Scripter
	mu   sync.Mutex
	live map[string]int
	subs int
}

func (s *countSubScripter) Subscribe(_ context.Context, ch string, _ func(string)) (func(), error) {
	s.mu.Lock()
	s.live[ch]++
	s.subs++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.live[ch]--
			if s.live[ch] == 0 {
				delete(s.live, ch)
			}
			s.mu.Unlock()
		})
	}, nil
}

func (s *countSubScripter) state() (live, subs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live), s.subs
}

// TestSlots checks the waiters' own channels: a slot taken while no other
// Lock of the name runs is not subscribed and is dropped when given back;
// one taken while others run is subscribed, stays so while idle and others
// run, and is reused (a new waiter id on the same channel); the last Lock
// out unsubscribes them all.
func TestSlots(t *testing.T) {
	s := &countSubScripter{live: map[string]int{}}
	c, err := New(s, nil)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	w1, ch1, sub1, give1 := c.takeSlot(ctx, "k:wake")
	assert.True(t, strings.HasPrefix(ch1, "k:wake:") && strings.HasPrefix(w1, strings.TrimPrefix(ch1, "k:wake:")+"."), "waiter %q on %q", w1, ch1)
	live, subs := s.state()
	assert.Equal(t, []int{0, 0}, []int{live, subs}, "alone: not subscribed by takeSlot")
	assert.False(t, sub1, "alone: takeSlot reports the slot not subscribed")

	w2, ch2, sub2, give2 := c.takeSlot(ctx, "k:wake")
	live, subs = s.state()
	assert.Equal(t, []int{1, 1}, []int{live, subs}, "with another Lock running: subscribed")
	assert.True(t, sub2, "with another Lock running: takeSlot reports the slot subscribed")
	assert.NotEqual(t, ch1, ch2)
	give2()
	live, _ = s.state()
	assert.Equal(t, 1, live, "idle while another Lock runs: still subscribed")

	w3, ch3, sub3, give3 := c.takeSlot(ctx, "k:wake")
	assert.Equal(t, ch2, ch3, "the idle slot is reused")
	assert.NotEqual(t, w2, w3, "under a new waiter id")
	_, subs = s.state()
	assert.Equal(t, 1, subs, "reuse costs no subscription")
	assert.True(t, sub3, "a reused slot is reported subscribed")
	give3()
	give1()
	live, _ = s.state()
	assert.Equal(t, 0, live, "the last one out unsubscribes every idle slot")
	_, _, _, give4 := c.takeSlot(ctx, "k:wake")
	give4()
	live, subs = s.state()
	assert.Equal(t, 0, live)
	assert.Equal(t, 1, subs, "a slot taken alone again is not subscribed")
}
