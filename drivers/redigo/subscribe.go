package redigo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"

	"github.com/scriptlock/scriptlock/drivers/internal/pubsubmux"
)

// Subscribe implements locker.Subscriber with sharded pub/sub (SSUBSCRIBE),
// or plain pub/sub (SUBSCRIBE) on a server that has no sharded pub/sub
// (Redis before 7.0, miniredis), where the scripts publish with PUBLISH:
// each pub/sub connection tries SSUBSCRIBE first and, when the server
// answers that it does not know the command, uses SUBSCRIBE from then on.
// It subscribes onMessage to channel and blocks until the server confirms
// the subscription (at once when the channel is already subscribed), ctx
// is done, or the subscription fails; it then returns an error and leaves
// nothing subscribed. It also fails when no confirmation arrives within
// 5 s.
//
// All channels of one node share one pub/sub connection, opened by the
// first Subscribe for that node and closed when its last subscription is
// unsubscribed: one for a Pool's server, one per master of a Cluster (the
// master of the channel's slot). These connections are dialed directly,
// outside any pool; see the package doc.
//
// onMessage is called from a goroutine of the driver for every message on
// channel, with the message's payload (its body, as published with
// SPUBLISH or PUBLISH), never concurrently with itself, and must not block.
// It may also be called spuriously, with the empty payload "", when
// messages may have been lost (after a reconnection, for instance). unsubscribe is
// idempotent and never blocks on the network; once it returns onMessage is
// not called again. It waits for a call of onMessage in progress, so
// onMessage must not call its own unsubscribe. Subscribe and unsubscribe
// are safe for concurrent use.
func (s *Scripter) Subscribe(ctx context.Context, channel string, onMessage func(payload string)) (unsubscribe func(), err error) {
	return s.mux.Subscribe(ctx, channel, onMessage)
}

// poolTransport serves a single server: one shard, dialed with the
// Pool's own dial function.
type poolTransport struct {
	p *redis.Pool
}

func (poolTransport) Route(context.Context, string) (string, error) { return "", nil }

func (t poolTransport) Dial(ctx context.Context, _ string) (pubsubmux.Conn, error) {
	var (
		c   redis.Conn
		err error
	)
	switch {
	case t.p.DialContext != nil:
		c, err = t.p.DialContext(ctx)
	case t.p.Dial != nil:
		c, err = t.p.Dial()
	default:
		return nil, errors.New("redigo: the Pool has neither DialContext nor Dial")
	}
	if err != nil {
		return nil, err
	}
	return newConn(ctx, c), nil
}

func (poolTransport) Stale(string, error) {}

func (poolTransport) Lost(string) {}

// clusterTransport serves a Redis Cluster. redisc keeps its slot map to
// itself, so the transport keeps its own: loaded with CLUSTER SLOTS when a
// slot is unknown, updated by MOVED replies, and forgotten for a node that
// cannot be reached.
type clusterTransport struct {
	c *redisc.Cluster

	mu    sync.Mutex
	slots [redisc.HashSlots]string // master address per slot, "" if unknown
}

func (t *clusterTransport) Route(ctx context.Context, channel string) (string, error) {
	slot := redisc.Slot(channel)
	t.mu.Lock()
	addr := t.slots[slot]
	t.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	if err := t.load(ctx); err != nil {
		return "", err
	}
	t.mu.Lock()
	addr = t.slots[slot]
	t.mu.Unlock()
	if addr == "" {
		return "", fmt.Errorf("redigo: no master serves slot %d", slot)
	}
	return addr, nil
}

// load replaces the slot map with CLUSTER SLOTS from any node.
func (t *clusterTransport) load(ctx context.Context) error {
	v, err := withContext(ctx, func() (any, error) {
		conn := t.c.Get()
		defer conn.Close()
		if err := redisc.BindConn(conn); err != nil { // any node
			return nil, err
		}
		return redis.Values(conn.Do("CLUSTER", "SLOTS"))
	})
	if err != nil {
		return fmt.Errorf("redigo: CLUSTER SLOTS: %w", err)
	}
	var slots [redisc.HashSlots]string
	for _, r := range v.([]any) {
		// [start, end, [ip, port, id, ...], replicas...]
		rng, ok := r.([]any)
		if !ok || len(rng) < 3 {
			return fmt.Errorf("redigo: CLUSTER SLOTS: unexpected entry %v", r)
		}
		start, err1 := redis.Int(rng[0], nil)
		end, err2 := redis.Int(rng[1], nil)
		master, err3 := redis.Values(rng[2], nil)
		if err := errors.Join(err1, err2, err3); err != nil || len(master) < 2 || start < 0 || end >= redisc.HashSlots || start > end {
			return fmt.Errorf("redigo: CLUSTER SLOTS: unexpected entry %v", r)
		}
		host, err1 := redis.String(master[0], nil)
		port, err2 := redis.Int(master[1], nil)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("redigo: CLUSTER SLOTS: unexpected entry %v", r)
		}
		addr := host + ":" + strconv.Itoa(port) // as redisc spells node addresses
		for i := start; i <= end; i++ {
			slots[i] = addr
		}
	}
	t.mu.Lock()
	t.slots = slots
	t.mu.Unlock()
	return nil
}

func (t *clusterTransport) Dial(ctx context.Context, addr string) (pubsubmux.Conn, error) {
	// The way redisc dials a connection outside its pools.
	c, err := redis.DialContext(ctx, "tcp", addr, t.c.DialOptions...)
	if err != nil {
		return nil, err
	}
	return newConn(ctx, c), nil
}

// Lost forgets the slots of a node whose connection failed: it may have
// failed over.
func (t *clusterTransport) Lost(addr string) { t.forget(addr) }

// forget clears the slots mapped to addr, so that Route reloads them.
func (t *clusterTransport) forget(addr string) {
	if addr == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, a := range t.slots {
		if a == addr {
			t.slots[i] = ""
		}
	}
}

func (t *clusterTransport) Stale(channel string, err error) {
	if err == nil {
		// The node dropped the subscription: its slots changed hands.
		t.mu.Lock()
		addr := t.slots[redisc.Slot(channel)]
		t.mu.Unlock()
		t.forget(addr)
		return
	}
	if re := redisc.ParseRedir(err); re != nil && re.Type == "MOVED" && re.NewSlot >= 0 && re.NewSlot < redisc.HashSlots {
		t.mu.Lock()
		t.slots[re.NewSlot] = re.Addr
		t.mu.Unlock()
	}
}

// conn is one redigo connection in pub/sub mode. redigo's PubSubConn does
// not know the sharded commands (ssubscribe, smessage), so conn sends and
// parses them, and their plain forms, itself.
type conn struct {
	c    redis.Conn
	stop func() bool // cancels the close-on-ctx-done hook
}

// newConn wraps c and closes it when ctx is done, which unblocks a write
// stuck on a dead peer.
func newConn(ctx context.Context, c redis.Conn) *conn {
	return &conn{c: c, stop: context.AfterFunc(ctx, func() { _ = c.Close() })}
}

func (c *conn) Send(_ context.Context, cmd pubsubmux.Cmd, channel string) error {
	var err error
	switch cmd {
	case pubsubmux.SSubscribe:
		err = c.c.Send("SSUBSCRIBE", channel)
	case pubsubmux.SUnsubscribe:
		err = c.c.Send("SUNSUBSCRIBE", channel)
	case pubsubmux.Subscribe:
		err = c.c.Send("SUBSCRIBE", channel)
	case pubsubmux.Unsubscribe:
		err = c.c.Send("UNSUBSCRIBE", channel)
	case pubsubmux.Ping:
		err = c.c.Send("PING")
	default:
		err = fmt.Errorf("redigo: unknown pub/sub command %v", cmd)
	}
	if err != nil {
		return err
	}
	return c.c.Flush()
}

func (c *conn) Receive() (pubsubmux.Event, error) {
	var (
		v   any
		err error
	)
	if _, ok := c.c.(redis.ConnWithTimeout); ok {
		v, err = redis.ReceiveWithTimeout(c.c, 0) // no read timeout: liveness is checked with PING
	} else {
		v, err = c.c.Receive()
	}
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return pubsubmux.Event{Kind: pubsubmux.ErrorReply, Err: rerr}, nil
		}
		return pubsubmux.Event{}, err
	}
	if s, ok := v.(string); ok && s == "PONG" { // PING with no subscription
		return pubsubmux.Event{Kind: pubsubmux.Pong}, nil
	}
	vals, ok := v.([]any)
	if !ok || len(vals) < 2 {
		return pubsubmux.Event{}, fmt.Errorf("redigo: unexpected pub/sub reply %v", v)
	}
	kind, err1 := redis.String(vals[0], nil)
	channel, err2 := redis.String(vals[1], nil)
	if kind == "pong" {
		return pubsubmux.Event{Kind: pubsubmux.Pong}, nil
	}
	if err := errors.Join(err1, err2); err != nil {
		return pubsubmux.Event{}, fmt.Errorf("redigo: unexpected pub/sub reply %v", v)
	}
	switch kind {
	case "smessage", "message":
		// [kind, channel, payload]
		if len(vals) < 3 {
			return pubsubmux.Event{}, fmt.Errorf("redigo: unexpected pub/sub reply %v", v)
		}
		payload, err := redis.String(vals[2], nil)
		if err != nil {
			return pubsubmux.Event{}, fmt.Errorf("redigo: unexpected pub/sub message payload %v", vals[2])
		}
		return pubsubmux.Event{Kind: pubsubmux.Message, Channel: channel, Payload: payload}, nil
	case "ssubscribe", "subscribe":
		return pubsubmux.Event{Kind: pubsubmux.Subscribed, Channel: channel}, nil
	case "sunsubscribe", "unsubscribe":
		return pubsubmux.Event{Kind: pubsubmux.Unsubscribed, Channel: channel}, nil
	}
	return pubsubmux.Event{}, fmt.Errorf("redigo: unexpected pub/sub reply %q", kind)
}

func (c *conn) Close() error {
	c.stop()
	return c.c.Close()
}
