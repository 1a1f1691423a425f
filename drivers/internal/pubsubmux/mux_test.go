package pubsubmux

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer answers the Mux's commands as a Redis server would: with
// sharded pub/sub (7.0 and later) or without it (6.2, miniredis), where
// SSUBSCRIBE is an unknown command.
type fakeServer struct {
	sharded bool
	refuse  error // when set, the answer to every SSUBSCRIBE

	mu    sync.Mutex
	conns []*fakeConn
	sent  []string // every command received, as "SSUBSCRIBE a"
}

func (s *fakeServer) Route(context.Context, string) (string, error) { return "", nil }
func (s *fakeServer) Stale(string, error)                           {}
func (s *fakeServer) Lost(string)                                   {}

func (s *fakeServer) Dial(context.Context, string) (Conn, error) {
	c := &fakeConn{s: s, events: make(chan Event, 64), closed: make(chan struct{}), subs: map[string]Cmd{}}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	return c, nil
}

// commands returns the commands received so far.
func (s *fakeServer) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// publish delivers a message with payload to every connection subscribed
// to channel with the command the server's publish reaches: SSUBSCRIBE for
// SPUBLISH on a sharded server, SUBSCRIBE for PUBLISH otherwise.
func (s *fakeServer) publish(channel, payload string) {
	want := Subscribe
	if s.sharded {
		want = SSubscribe
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c.subs[channel] == want {
			c.push(Event{Kind: Message, Channel: channel, Payload: payload})
		}
	}
}

// dropAll breaks every connection, as a restart would.
func (s *fakeServer) dropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
}

type fakeConn struct {
	s      *fakeServer
	events chan Event
	once   sync.Once
	closed chan struct{}
	subs   map[string]Cmd // guarded by s.mu
}

func (c *fakeConn) push(ev Event) {
	select {
	case c.events <- ev:
	case <-c.closed:
	}
}

func (c *fakeConn) Send(_ context.Context, cmd Cmd, channel string) error {
	select {
	case <-c.closed:
		return errors.New("use of closed connection")
	default:
	}
	s := c.s
	s.mu.Lock()
	s.sent = append(s.sent, fmt.Sprintf("%v %s", cmd, channel))
	var ev Event
	switch cmd {
	case SSubscribe:
		switch {
		case !s.sharded:
			ev = Event{Kind: ErrorReply, Err: fmt.Errorf("ERR unknown command `ssubscribe`, with args beginning with: `%s`, ", channel)}
		case s.refuse != nil:
			ev = Event{Kind: ErrorReply, Err: s.refuse}
		default:
			c.subs[channel] = cmd
			ev = Event{Kind: Subscribed, Channel: channel}
		}
	case Subscribe:
		c.subs[channel] = cmd
		ev = Event{Kind: Subscribed, Channel: channel}
	case SUnsubscribe, Unsubscribe:
		delete(c.subs, channel)
		ev = Event{Kind: Unsubscribed, Channel: channel}
	case Ping:
		ev = Event{Kind: Pong}
	}
	s.mu.Unlock()
	c.push(ev)
	return nil
}

func (c *fakeConn) Receive() (Event, error) {
	select {
	case ev := <-c.events:
		return ev, nil
	case <-c.closed:
		return Event{}, errors.New("connection closed")
	}
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestPlainPubSubFallback checks that on a server without sharded pub/sub
// a connection falls back from SSUBSCRIBE to SUBSCRIBE once, remembers it
// for its later channels, leaves with UNSUBSCRIBE, delivers messages, and
// asks again on a new connection.
func TestPlainPubSubFallback(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	ctx := testCtx(t)
	srv := &fakeServer{}
	m := New("test", srv)

	var a, b atomic.Int64
	unA, err := m.Subscribe(ctx, "a", func(string) { a.Add(1) })
	require.NoError(t, err, "call: Subscribe(a) on a server without SSUBSCRIBE")
	unB, err := m.Subscribe(ctx, "b", func(string) { b.Add(1) })
	require.NoError(t, err, "call: Subscribe(b)")
	assert.Equal(t, []string{"SSUBSCRIBE a", "SUBSCRIBE a", "SUBSCRIBE b"}, srv.commands(),
		"the connection asks once, then subscribes every channel with SUBSCRIBE")

	srv.publish("a", "")
	require.Eventually(t, func() bool { return a.Load() == 1 }, 5*time.Second, time.Millisecond, "a got the message published with PUBLISH")
	assert.Zero(t, b.Load(), "b got a message of another channel")

	unA()
	require.Eventually(t, func() bool { return len(srv.commands()) == 4 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "UNSUBSCRIBE a", srv.commands()[3], "a channel subscribed with SUBSCRIBE is left with UNSUBSCRIBE")

	// A new connection asks again: the server may have been upgraded.
	srv.dropAll()
	require.Eventually(t, func() bool { return len(srv.commands()) == 6 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"SSUBSCRIBE b", "SUBSCRIBE b"}, srv.commands()[4:], "after a reconnection")
	require.Eventually(t, func() bool { return b.Load() >= 2 }, 5*time.Second, time.Millisecond,
		"b is called after the loss and again once subscribed anew (messages may have been lost)")
	n := b.Load()
	srv.publish("b", "")
	require.Eventually(t, func() bool { return b.Load() == n+1 }, 5*time.Second, time.Millisecond, "b hears PUBLISH after the reconnection")
	unB()
}

// TestShardedPubSub checks that a server with sharded pub/sub gets
// SSUBSCRIBE and SUNSUBSCRIBE only.
func TestShardedPubSub(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	ctx := testCtx(t)
	srv := &fakeServer{sharded: true}
	m := New("test", srv)
	var a atomic.Int64
	unA, err := m.Subscribe(ctx, "a", func(string) { a.Add(1) })
	require.NoError(t, err)
	unB, err := m.Subscribe(ctx, "b", func(string) {})
	require.NoError(t, err)
	srv.publish("a", "")
	require.Eventually(t, func() bool { return a.Load() == 1 }, 5*time.Second, time.Millisecond)
	unA()
	require.Eventually(t, func() bool { return len(srv.commands()) == 3 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"SSUBSCRIBE a", "SSUBSCRIBE b", "SUNSUBSCRIBE a"}, srv.commands())
	unB()
}

// TestSSubscribeRefused checks that an SSUBSCRIBE refused for another
// reason than an unknown command (here an ACL's NOPERM) fails Subscribe
// and does not fall back to SUBSCRIBE.
func TestSSubscribeRefused(t *testing.T) {
	defer leak.VerifyNone(t, leak.IgnoreCurrent())
	ctx := testCtx(t)
	srv := &fakeServer{sharded: true, refuse: errors.New("NOPERM this user has no permissions to access the 'a' channel")}
	m := New("test", srv)
	_, err := m.Subscribe(ctx, "a", func(string) {})
	require.Error(t, err, "call: Subscribe refused with NOPERM")
	assert.ErrorContains(t, err, "NOPERM")
	assert.Equal(t, []string{"SSUBSCRIBE a"}, srv.commands())
}

// TestPayload checks that onMessage gets each message's payload, with
// sharded and plain pub/sub, that every subscriber of a channel gets it,
// and that the spurious calls after a connection loss get "".
func TestPayload(t *testing.T) {
	for _, sharded := range []bool{true, false} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			defer leak.VerifyNone(t, leak.IgnoreCurrent())
			ctx := testCtx(t)
			srv := &fakeServer{sharded: sharded}
			m := New("test", srv)
			var a, b syncx.Log[string]
			unA, err := m.Subscribe(ctx, "a", a.Add)
			require.NoError(t, err)
			unB, err := m.Subscribe(ctx, "a", b.Add)
			require.NoError(t, err)

			srv.publish("a", "1700000000123456")
			srv.publish("a", "")
			srv.publish("a", "x y\r\n")
			want := []string{"1700000000123456", "", "x y\r\n"}
			require.Eventually(t, func() bool { return len(a.All()) == 3 && len(b.All()) == 3 }, 5*time.Second, time.Millisecond)
			assert.Equal(t, want, a.All(), "each message's payload, in order")
			assert.Equal(t, want, b.All(), "the second subscriber of the channel")

			// A connection loss calls onMessage spuriously, with "".
			srv.dropAll()
			require.Eventually(t, func() bool { return len(a.All()) >= 5 }, 5*time.Second, time.Millisecond,
				"called after the loss and once subscribed anew")
			for i, p := range a.All()[3:] {
				assert.Equal(t, "", p, "spurious call %d", i)
			}
			n := len(a.All())
			srv.publish("a", "1700000000999999")
			require.Eventually(t, func() bool { return len(a.All()) == n+1 }, 5*time.Second, time.Millisecond)
			assert.Equal(t, "1700000000999999", a.All()[n], "the payload after the reconnection")
			unA()
			unB()
		})
	}
}

func TestIsUnknownCommand(t *testing.T) {
	for msg, want := range map[string]bool{
		"ERR unknown command `ssubscribe`, with args beginning with: `x`, ":   true,
		"unknown command `SSUBSCRIBE`, with args beginning with: `x`, ":       true, // rueidis drops "ERR "
		"ERR unknown command 'ssubscribe'":                                    true,
		"NOPERM this user has no permissions to run the 'ssubscribe' command": false,
		"MOVED 3999 127.0.0.1:6381":                                           false,
	} {
		assert.Equal(t, want, IsUnknownCommand(errors.New(msg)), "%q", msg)
	}
	assert.False(t, IsUnknownCommand(nil))
}
