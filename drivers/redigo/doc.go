// Package redigo adapts redigo (github.com/gomodule/redigo) to the
// [locker.Scripter] contract: [New] for a single server behind a
// *redis.Pool, [NewCluster] for Redis Cluster through github.com/mna/redisc.
//
// The driver only sends EVALSHA, EVAL and SCRIPT LOAD and translates their
// replies ([]byte becomes string); it adds no retries, caching or timeouts of
// its own. It takes a connection for each call and always closes it.
//
// # Contexts
//
// On a Pool, a call gets its connection with Pool.GetContext and runs the
// command with redis.DoContext, so ctx bounds both; when ctx ends during a
// command redigo closes that connection. The pool's connections must
// implement redis.ConnWithContext, as those of redis.Dial and
// redis.DialContext do.
//
// redisc has no context support: Cluster has no GetContext and its
// connections implement neither redis.ConnWithContext nor anything else that
// takes a context. A Cluster call therefore runs in a goroutine of its own
// and the caller returns as soon as ctx is done, with ctx's error; the
// abandoned command keeps its connection until the server replies or the
// connection's read timeout fires, and then closes it. Give the Cluster a
// read timeout (redis.DialReadTimeout in Cluster.DialOptions) so that a dead
// node cannot hold such a goroutine forever. A context that can never be done
// (context.Background) needs no goroutine: the call runs on the caller's.
//
// # Cluster routing
//
// redisc routes a command by its first argument, which for EVALSHA is the
// SHA-1, not a key. The driver therefore binds each connection to the slot
// of keys[0] (any node when there are no keys) and follows MOVED and ASK
// redirections, and TRYAGAIN replies, with redisc.RetryConn for at most a
// few attempts. That is routing, not retrying failures: every other error is
// returned at once.
//
// # Push wake-ups
//
// The Scripter also implements [locker.Subscriber] with sharded pub/sub
// (SSUBSCRIBE; plain SUBSCRIBE on a server without it, such as Redis 6.2
// or miniredis), so waiters are woken by the release itself. redigo's
// PubSubConn does not know the sharded commands, so the driver speaks them
// itself on a plain connection.
//
// All channels served by one node share one connection: for a Pool, one
// dialed with the Pool's DialContext (or Dial) function, outside the pool
// and its limits (a subscribed connection must never go back to a pool);
// for a Cluster, one per master, dialed as redisc dials nodes
// (redis.DialContext with Cluster.DialOptions). The driver routes channels
// with its own copy of the slot map (CLUSTER SLOTS, updated by MOVED
// replies), since redisc does not expose its own. A connection is opened by
// the first Subscribe for its node and closed when the node's last
// subscription is unsubscribed; while open it is served by two goroutines
// of the driver (a reader and a writer). Its reads have no timeout, whatever
// the DialOptions say: liveness is checked with PING after 3 s of silence,
// and the connection is dropped when the PING stays unanswered for 3 s.
// Nothing runs when nothing is subscribed, and the Scripter needs no Close.
//
// When a connection is lost, every subscriber of that connection is called
// at once (messages may have been lost), and the driver reconnects with
// backoff (50 ms doubling to 2 s, calling the subscribers again after each
// failed attempt) for as long as subscriptions remain, routes each channel
// afresh, subscribes again, and calls the subscribers once more when the
// server confirms. A MOVED reply, or the server dropping a channel by
// itself (its slot migrated, or a failover demoted the node), moves the
// channel to its current master the same way. A Subscribe still waiting for
// its confirmation fails instead, as it does after 5 s without one.
//
// A minimal setup, with the pool settings the conformance suite certifies
// the driver with (docs/guide.md has them as functions to copy):
//
//	pool := &redis.Pool{
//		MaxIdle:             64,
//		IdleTimeout:         time.Minute,
//		TestOnBorrowContext: testOnBorrow, // PING idle connections with redis.DoContext
//		DialContext: func(ctx context.Context) (redis.Conn, error) {
//			return redis.DialContext(ctx, "tcp", "localhost:6379",
//				redis.DialConnectTimeout(5*time.Second))
//		},
//	}
//	s := redigo.New(pool)
//
//	cluster := &redisc.Cluster{
//		StartupNodes: []string{"localhost:7000", "localhost:7001"},
//		DialOptions:  []redis.DialOption{redis.DialReadTimeout(10 * time.Second)},
//		CreatePool: func(addr string, opts ...redis.DialOption) (*redis.Pool, error) {
//			return &redis.Pool{
//				MaxIdle:             64,
//				IdleTimeout:         time.Minute,
//				TestOnBorrowContext: testOnBorrow,
//				DialContext: func(ctx context.Context) (redis.Conn, error) {
//					return redis.DialContext(ctx, "tcp", addr, opts...)
//				},
//			}, nil
//		},
//	}
//	cs := redigo.NewCluster(cluster)
//
// The PING of TestOnBorrowContext must honour the caller's context: a pool
// whose TestOnBorrow pings with c.Do holds a TryLock past its deadline
// while the server stalls.
//
// # Replica acknowledgement
//
// The Scripter implements [locker.Acknowledger] (for locker.Options.Ack),
// through a Pool and on a Cluster: the script and WAIT (or WAITAOF) are
// sent on one connection to the node of the script's key. Through a Pool,
// keep the dial's read timeout (DialReadTimeout) above Ack.Timeout: redigo
// reads the wait's reply under it.
package redigo
