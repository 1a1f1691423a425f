// Package redisserver starts throwaway redis-server processes for tests and
// benchmarks and offers admin helpers for fault injection.
//
// [StartStandalone] starts one server, [StartCluster] a Redis Cluster of
// three masters and [StartClusterWithReplicas] one of three masters with a
// replica each. Each process listens on a free loopback port, keeps no data
// on disk (no RDB, no AOF), lives in its own temporary directory, logs to a
// file there, and is stopped (SIGTERM, then SIGKILL after 2s) and its
// directory removed by a t.Cleanup. On Linux the processes are also killed
// when the test binary dies.
//
// The processes run the redis-server found in PATH: Redis 6.2 or later, or
// Valkey (whose binary may be linked under that name). Its version, read
// once from redis-server --version ([BinaryVersion], [Server.Release]),
// decides what an older server would refuse: before 7.0 there is no
// enable-debug-command directive (DEBUG is always allowed there), no
// cluster-port (the cluster bus listens on the client port + 10000, so
// both must be free) and no CLUSTER ADDSLOTSRANGE (ADDSLOTS instead).
//
// Tests use real Redis always: when redis-server is not in PATH the start
// functions fail the test with a message that names the fix; they never skip.
// Two environment variables point tests at servers started elsewhere instead:
//
//	SCRIPTLOCK_REDIS_ADDR=host:port             used by StartStandalone
//	SCRIPTLOCK_CLUSTER_ADDRS=host:port,host:port used by StartCluster and
//	                                            StartClusterWithReplicas
//
// Such external servers are never started, stopped or restarted by this
// package; [Server.Restart], [Server.Stop] and [Server.Kill] fail on them,
// and [Server.External] and [Cluster.External] tell them apart.
//
// The admin helpers ([Server.Do], [Server.ScriptFlush], [Server.ClientKill],
// [Server.Pause], [Server.Restart], ...) talk RESP2 over a fresh connection
// per call, so they never share state with the client under test. Replies
// come back as nil, int64, string or []any, the same vocabulary as the
// locker package; server errors come back as *[RedisError].
//
// Faults and changes for chaos tests:
//
//   - [Server.Restart] (data lost, address kept), [Server.Stop] and
//     [Server.Kill] (a crash: SIGKILL);
//   - [Server.Pause], [Server.ClientKill], [Server.ScriptFlush] and their
//     Cluster forms;
//   - [Cluster.Failover] (a manual failover of a master to its replica);
//   - [Cluster.MigrateSlot] and [Cluster.MigrateSlotSlowly] (resharding one
//     slot, with ASK during and MOVED after), and [Cluster.BeginMigration]
//     (a slot held IMPORTING/MIGRATING, no key moved, until
//     [Migration.Finish]), with [Cluster.SlotOf], [Cluster.NodeForSlot] and
//     [Cluster.OtherMaster] to pick the slot and the target.
//
// [Server.CreateACLUser] and [Cluster.CreateACLUser] make a restricted ACL
// user, [Server.DeleteACLUser] and [Cluster.DeleteACLUser] delete it, and
// [Server.DoAs] runs a command as that user.
//
// The package uses only the standard library.
package redisserver
