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
// A minimal setup:
//
//	pool := &redis.Pool{
//		Dial: func() (redis.Conn, error) {
//			return redis.Dial("tcp", "localhost:6379",
//				redis.DialReadTimeout(5*time.Second))
//		},
//	}
//	s := redigo.New(pool)
//
//	cluster := &redisc.Cluster{
//		StartupNodes: []string{"localhost:7000", "localhost:7001"},
//		DialOptions:  []redis.DialOption{redis.DialReadTimeout(5 * time.Second)},
//		CreatePool: func(addr string, opts ...redis.DialOption) (*redis.Pool, error) {
//			return &redis.Pool{
//				Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr, opts...) },
//			}, nil
//		},
//	}
//	cs := redigo.NewCluster(cluster)
package redigo
