// Package valkeygo adapts valkey-go (github.com/valkey-io/valkey-go), the
// Valkey project's Go client, to the [locker.Scripter] contract.
//
// [New] accepts any valkey.Client: a single server, a Cluster, or a
// Sentinel-managed primary; it works with Valkey and with Redis. The
// driver only sends EVALSHA, EVAL and SCRIPT LOAD (and, for the optional
// interfaces below, SSUBSCRIBE and WAIT) and translates their replies; it
// adds no retries, caching or timeouts of its own, and it changes nothing
// in the client's configuration:
//
//	client, err := valkey.NewClient(valkey.ClientOption{
//		InitAddress:  []string{"localhost:6379"}, // a Cluster: any of its nodes
//		DisableCache: true,
//	})
//	if err != nil {
//		// handle err
//	}
//	defer client.Close()
//	locks, err := locker.New(valkeygo.New(client), nil)
//
// Client-side caching is never used (script calls are not cacheable), so
// DisableCache costs nothing; set it when the server refuses CLIENT
// TRACKING, as miniredis does and as an ACL user granted only the commands
// in conformance.ACLCommands does. valkey-go detects a Cluster by itself.
// It panics on a command whose keys span several hash slots; the
// scriptlock core always passes keys that share one slot.
//
// valkey-go is a fork of rueidis, and this driver is the rueidis driver's
// twin: what that driver's documentation says about rueidis holds here
// for valkey-go v1.0.79.
//
// # Push wake-ups
//
// The Scripter implements [locker.Subscriber] with sharded pub/sub
// (SSUBSCRIBE through Client.Receive; plain SUBSCRIBE on a server without
// it, such as Redis 6.2 or miniredis), so waiters are woken by the release
// itself. The driver opens no connection of its own: valkey-go carries the
// subscriptions on its connection to the node that owns each channel's
// slot (with RESP3, the node's pipelined connection; with RESP2, one extra
// connection per node), so all channels of a node share one connection,
// and valkey-go routes, follows MOVED and reconnects. Each subscribed
// channel has a goroutine of the driver, blocked in Client.Receive, from
// its first Subscribe until its last subscription ends; it then sends
// SUNSUBSCRIBE (UNSUBSCRIBE) on that connection (valkey-go itself leaves
// the server subscribed when a Receive call returns) and exits. Nothing
// runs when nothing is subscribed, and the Scripter needs no Close.
//
// Subscribe returns once valkey-go reports the server's confirmation. When
// the connection fails, the driver stops valkey-go from retrying behind
// its back, calls every subscriber of the channel at once (messages may
// have been lost) and subscribes again, pausing 50 ms doubling to 2 s
// between calls that fail. The driver calls the subscribers once more when
// the server confirms again, and whenever valkey-go reports a
// resubscription of its own. A Subscribe still waiting for its
// confirmation fails when the connection fails, and after 5 s without
// one, which is how an unreachable server shows up.
//
// On miniredis, set ClientOption.DisableCache and AlwaysRESP2: miniredis
// refuses other commands on a connection that subscribed, which valkey-go
// shares under RESP3. Elsewhere keep the default RESP3: with AlwaysRESP2,
// once the extra pub/sub connection to a node drops, rueidis v1.0.79 does
// not open a new one until the node's main connection fails too, and
// valkey-go v1.0.79 has the same code (not tested separately here);
// subscribers of that node then hear only the driver's calls after each
// failed attempt (polling every 2 s), and new Subscribe calls fail.
//
// # Batched refreshes
//
// The Scripter implements [locker.Batcher]: one DoMulti carries a batch of
// EVALSHA calls, which valkey-go pipelines, one round trip per node.
//
// # Replica acknowledgement
//
// The Scripter implements [locker.Acknowledger] (for locker.Options.Ack):
// the script and WAIT (or WAITAOF) travel together on one connection (of
// the blocking pool on a single server, of a dedicated client bound to the
// key's slot on a Cluster; a MOVED or ASK reply to the script is followed
// once, both commands going to the node it names). The ACL user then needs
// +wait (or +waitaof) as well.
package valkeygo

// The driver's code is the rueidis driver's with valkey-go's names: the
// *_gen.go files are generated from drivers/rueidis (see
// drivers/internal/valkeygen); edit those, then run go generate here.
// TestGenerated fails when they are stale.
//go:generate go run ../internal/cmd/valkeygen
