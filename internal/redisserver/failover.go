package redisserver

import (
	"context"
	"fmt"
	"time"
)

// failoverRetry is how long Failover waits for a manual failover before it
// sends CLUSTER FAILOVER again. Redis gives one up after 5s, for instance
// when the masters refuse their votes because they voted for a replica of
// the same master less than twice the node timeout (4s) ago.
const failoverRetry = 6 * time.Second

// Failover makes master's replica the master in its place with a manual
// failover (CLUSTER FAILOVER on the replica): the master stops accepting
// writes until the replica has caught up, so no acknowledged write is lost,
// and then the replica takes over the slots. It returns the new master.
//
// It blocks until the replica reports role master, the old master reports
// role slave of it with its link up, and the cluster is healthy again as
// [Cluster.WaitReady] describes, with every node agreeing on the new slot
// map; Nodes and Replicas then hold the pair swapped, so [Cluster.NodeFor],
// [Cluster.Keys] and [Cluster.ScriptFlush] follow. That usually takes about
// a second. Clients meanwhile see their commands to master wait, then
// MOVED to the new master; scripts are not replicated, so the new master
// has none cached (EVALSHA gets NOSCRIPT) unless they were loaded there.
//
// It fails when master is not one of the current masters, the cluster has
// no replicas, the replica refuses the command, or ctx is done first; on
// failure Nodes and Replicas are left as they were unless the replica did
// take over.
func (c *Cluster) Failover(ctx context.Context, master *Server) (newMaster *Server, err error) {
	return c.failover(ctx, master, "FAILOVER")
}

// Takeover is Failover with CLUSTER FAILOVER TAKEOVER: the replica takes
// the slots at once, without waiting to catch up with its master and
// without the other masters' votes, so writes its master acknowledged but
// had not yet sent it are lost (the old master turns into its replica and
// resynchronises). It blocks and fails as Failover does.
func (c *Cluster) Takeover(ctx context.Context, master *Server) (newMaster *Server, err error) {
	return c.failover(ctx, master, "FAILOVER", "TAKEOVER")
}

// failover sends CLUSTER <args...> to master's replica and waits for the
// switch, as Failover describes.
func (c *Cluster) failover(ctx context.Context, master *Server, args ...string) (newMaster *Server, err error) {
	replica, err := c.ReplicaOf(master)
	if err != nil {
		return nil, err
	}
	var (
		sent    time.Time
		refused error
	)
	err = poll(ctx, func() error {
		promoted, err := failedOver(ctx, master, replica)
		if err != nil && !promoted && time.Since(sent) >= failoverRetry {
			if _, ferr := replica.Do(ctx, append([]string{"CLUSTER"}, args...)...); ferr != nil {
				if _, ok := ferr.(*RedisError); ok {
					refused = ferr
					return nil
				}
				return fmt.Errorf("%s: CLUSTER %v: %w", replica.Addr, args, ferr)
			}
			sent = time.Now()
		}
		return err
	})
	if refused != nil {
		return nil, fmt.Errorf("redisserver: Failover %s: CLUSTER %v on %s: %w", master.Addr, args, replica.Addr, refused)
	}
	if err != nil {
		return nil, fmt.Errorf("redisserver: Failover %s to %s: %w%s", master.Addr, replica.Addr, err, c.logTails())
	}
	c.promote(replica)
	if err := c.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("redisserver: Failover %s to %s: %w%s", master.Addr, replica.Addr, err, c.logTails())
	}
	return replica, nil
}

// failedOver returns nil when replica is a master and master its linked
// replica; otherwise it reports whether replica is a master yet and why the
// switch is not complete.
func failedOver(ctx context.Context, master, replica *Server) (promoted bool, err error) {
	rs, err := replica.info(ctx, "replication")
	if err != nil {
		return false, err
	}
	if rs["role"] != "master" {
		return false, fmt.Errorf("%s: role:%s", replica.Addr, rs["role"])
	}
	ms, err := master.info(ctx, "replication")
	if err != nil {
		return true, err
	}
	st := nodeState{repl: ms}
	if st.role() != "slave" || st.masterAddr() != replica.Addr || ms["master_link_status"] != "up" {
		return true, fmt.Errorf("%s: role:%s of %s, master_link_status:%s; want replica of %s", master.Addr, st.role(), st.masterAddr(), ms["master_link_status"], replica.Addr)
	}
	return true, nil
}
