package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"

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
// 5 s, and when the client is not a *redis.Client, *redis.ClusterClient
// or *redis.Ring (nor a redis.UniversalClient holding one).
//
// All channels of one node share one pub/sub connection, opened by the
// first Subscribe for that node and closed when its last subscription is
// unsubscribed: one for a single server, one per master of a Cluster (the
// master of the channel's slot), one per shard of a Ring. See the package
// doc for how connection losses are handled.
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

// transport connects the pubsubmux engine to go-redis: a shard is a node
// client, named by its address ("" for a single *redis.Client).
type transport struct {
	c redis.Scripter

	mu    sync.Mutex
	nodes map[string]*redis.Client // shard key -> node client, as last routed
}

func newTransport(c redis.Scripter) *transport {
	return &transport{c: c, nodes: make(map[string]*redis.Client)}
}

// errNoPubSub reports a client type without sharded pub/sub routing.
var errNoPubSub = errors.New("sharded pub/sub needs a *redis.Client, *redis.ClusterClient or *redis.Ring")

func (t *transport) Route(ctx context.Context, channel string) (string, error) {
	var (
		node *redis.Client
		key  string
		err  error
	)
	switch c := t.c.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		node, err = c.MasterForKey(ctx, channel)
	case *redis.Ring:
		node, err = c.GetShardClientForKey(channel)
	default:
		return "", fmt.Errorf("%w, not %T", errNoPubSub, t.c)
	}
	if err != nil {
		return "", err
	}
	if _, single := t.c.(*redis.Client); !single {
		key = node.Options().Addr
	}
	t.mu.Lock()
	t.nodes[key] = node
	t.mu.Unlock()
	return key, nil
}

func (t *transport) Dial(ctx context.Context, key string) (pubsubmux.Conn, error) {
	t.mu.Lock()
	node := t.nodes[key]
	t.mu.Unlock()
	if node == nil {
		return nil, fmt.Errorf("goredis: no client for node %q", key)
	}
	// SSubscribe without channels makes a PubSub with no connection yet;
	// its first command or Receive dials through the node's pub/sub pool.
	return &conn{ctx: ctx, ps: node.SSubscribe(ctx)}, nil
}

func (t *transport) Stale(string, error) { t.reload() }

func (t *transport) Lost(string) { t.reload() }

// reload makes a ClusterClient reload its slot map in the background.
func (t *transport) reload() {
	if cc, ok := t.c.(*redis.ClusterClient); ok {
		cc.ReloadState(context.Background()) // asynchronous
	}
}

// conn is one go-redis PubSub used as a raw pub/sub connection.
//
// go-redis reconnects a PubSub by itself after a network error and
// resubscribes all its channels in one command, which a Cluster node
// refuses (CROSSSLOT) when they span several slots. The engine therefore
// never relies on it: any error other than a server reply ends the
// connection, and the engine starts over with a new PubSub.
type conn struct {
	ctx context.Context
	ps  *redis.PubSub
}

func (c *conn) Send(ctx context.Context, cmd pubsubmux.Cmd, channel string) error {
	switch cmd {
	case pubsubmux.SSubscribe:
		return c.ps.SSubscribe(ctx, channel)
	case pubsubmux.SUnsubscribe:
		return c.ps.SUnsubscribe(ctx, channel)
	case pubsubmux.Subscribe:
		return c.ps.Subscribe(ctx, channel)
	case pubsubmux.Unsubscribe:
		return c.ps.Unsubscribe(ctx, channel)
	case pubsubmux.Ping:
		return c.ps.Ping(ctx)
	}
	return fmt.Errorf("goredis: unknown pub/sub command %v", cmd)
}

func (c *conn) Receive() (pubsubmux.Event, error) {
	v, err := c.ps.Receive(c.ctx)
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) && !isNetErr(err) {
			return pubsubmux.Event{Kind: pubsubmux.ErrorReply, Err: err}, nil
		}
		return pubsubmux.Event{}, err
	}
	switch v := v.(type) {
	case *redis.Message:
		return pubsubmux.Event{Kind: pubsubmux.Message, Channel: v.Channel, Payload: v.Payload}, nil
	case *redis.Subscription:
		switch v.Kind {
		case "ssubscribe", "subscribe":
			return pubsubmux.Event{Kind: pubsubmux.Subscribed, Channel: v.Channel}, nil
		case "sunsubscribe", "unsubscribe":
			return pubsubmux.Event{Kind: pubsubmux.Unsubscribed, Channel: v.Channel}, nil
		}
		return pubsubmux.Event{}, fmt.Errorf("goredis: unexpected pub/sub reply %s", v)
	case *redis.Pong:
		return pubsubmux.Event{Kind: pubsubmux.Pong}, nil
	}
	return pubsubmux.Event{}, fmt.Errorf("goredis: unexpected pub/sub reply %T", v)
}

func (c *conn) Close() error {
	return c.ps.Close()
}

// isNetErr reports whether err comes from the network rather than from a
// server reply (go-redis's redis.Error also matches some network errors).
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}
