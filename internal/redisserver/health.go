package redisserver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
)

// WaitReady waits until the cluster is healthy and every node agrees on it:
//
//   - every node reports cluster_state:ok and, for a started cluster, knows
//     all the nodes;
//   - every node's CLUSTER SLOTS is the same, covers all 16384 slots with
//     masters from Nodes and, when the cluster has replicas, lists each
//     master's replica;
//   - every replica is linked to its master (master_link_status:up).
//
// When a replica has taken over from its master by itself (the master was
// killed), WaitReady swaps the two in Nodes and Replicas and waits for the
// old master to rejoin as the replica.
//
// It polls every 10ms and blocks until then or ctx is done; it then fails
// with the last reason the cluster was not ready. [Server.Restart] on a node
// calls it.
func (c *Cluster) WaitReady(ctx context.Context) error {
	if err := poll(ctx, func() error { _, err := c.check(ctx); return err }); err != nil {
		return fmt.Errorf("cluster not ready: %w", err)
	}
	return nil
}

// check returns the slot map every node agrees on when the cluster is
// healthy as WaitReady describes, or the first reason it is not.
func (c *Cluster) check(ctx context.Context) ([]slotRange, error) {
	masters, replicas := c.view()
	states := make(map[*Server]*nodeState)
	for _, s := range append(masters, replicas...) {
		st, err := s.state(ctx)
		if err != nil {
			return nil, err
		}
		states[s] = st
	}
	for i := range replicas {
		m, r := masters[i], replicas[i]
		if states[m].role() == "slave" && states[r].role() == "master" && states[m].masterAddr() == r.Addr {
			// The replica took over: record it and check the new roles.
			c.promote(r)
			m, r = r, m
			masters[i], replicas[i] = m, r
		}
		if got := states[m].role(); got != "master" {
			return nil, fmt.Errorf("%s: role:%s, want master", m.Addr, got)
		}
		if rs := states[r]; rs.role() != "slave" || rs.masterAddr() != m.Addr {
			return nil, fmt.Errorf("%s: role:%s of %s, want replica of %s", r.Addr, rs.role(), rs.masterAddr(), m.Addr)
		}
		if got := states[r].repl["master_link_status"]; got != "up" {
			return nil, fmt.Errorf("%s: master_link_status:%s", r.Addr, got)
		}
	}
	all := append(masters, replicas...)
	var first []slotRange
	for i, s := range all {
		st := states[s]
		if got := st.info["cluster_state"]; got != "ok" {
			return nil, fmt.Errorf("%s: cluster_state:%s", s.Addr, got)
		}
		if want := strconv.Itoa(len(all)); !c.external && st.info["cluster_known_nodes"] != want {
			return nil, fmt.Errorf("%s: cluster_known_nodes:%s, want %s", s.Addr, st.info["cluster_known_nodes"], want)
		}
		next := 0
		for _, r := range st.ranges {
			if r.lo != next {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS: slot %d not covered", s.Addr, next)
			}
			mi := slices.IndexFunc(masters, func(n *Server) bool { return n.Addr == r.addr })
			if mi < 0 {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d served by %s, not one of the masters", s.Addr, r.lo, r.hi, r.addr)
			}
			if len(replicas) > 0 && !slices.Contains(r.replicas, replicas[mi].Addr) {
				return nil, fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d list replicas %v, not %s", s.Addr, r.lo, r.hi, r.replicas, replicas[mi].Addr)
			}
			next = r.hi + 1
		}
		if next != clusterSlots {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS: slot %d not covered", s.Addr, next)
		}
		if i == 0 {
			first = st.ranges
		} else if !slices.EqualFunc(first, st.ranges, slotRange.equal) {
			return nil, fmt.Errorf("%s: CLUSTER SLOTS %v disagrees with %s's %v", s.Addr, st.ranges, all[0].Addr, first)
		}
	}
	return first, nil
}
