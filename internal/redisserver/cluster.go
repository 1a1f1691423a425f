package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// clusterMasters is the number of masters StartCluster starts.
	clusterMasters = 3
	// clusterSlots is the number of hash slots in a Redis Cluster.
	clusterSlots = 16384
	// clusterReadyTimeout bounds StartCluster's wait for a healthy cluster.
	// Redis holds a new master's cluster_state at fail for 2s after start
	// (CLUSTER_WRITABLE_DELAY), so a start takes a little over 2s.
	clusterReadyTimeout = 20 * time.Second
)

// Cluster is a Redis Cluster of several masters and no replicas. Its methods
// are safe for concurrent use.
type Cluster struct {
	// Addrs are the seed addresses (host:port) clients connect to: the
	// masters of a started cluster, or the addresses in [EnvClusterAddrs].
	Addrs []string
	// Nodes are the masters, one Server each, in slot order. Admin commands
	// on a node see only that node's keys.
	Nodes []*Server

	external bool
}

// StartCluster starts a Redis Cluster of three masters and no replicas, each
// a redis-server on free loopback ports (client and cluster bus), with
// cluster-node-timeout 2000, no persistence and its own temporary directory
// holding its nodes.conf. It assigns the slots evenly (CLUSTER ADDSLOTSRANGE),
// joins every pair of nodes (CLUSTER MEET), and registers t.Cleanups that
// stop every node and then remove its directory.
//
// It blocks until every node reports cluster_state:ok and every node's
// CLUSTER SLOTS covers all 16384 slots with the same owners, so clients that
// connect right after see neither CLUSTERDOWN nor a stale slot map. That
// takes a little over 2s, because Redis keeps a freshly started master's
// cluster state at fail for 2s.
//
// When [EnvClusterAddrs] is set it returns a Cluster for that existing
// cluster instead: Addrs are the listed addresses, Nodes the masters found in
// CLUSTER SLOTS, and it waits (at most 20s) until the cluster is healthy as
// above. Such nodes are never started, stopped or restarted by this package.
//
// It calls t.Fatalf when redis-server is not in PATH (the message names the
// fix), when a node does not start or the cluster does not become healthy
// within 20s (the message holds the nodes' log tails), or when the external
// cluster does not answer or is unhealthy.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if env := os.Getenv(EnvClusterAddrs); env != "" {
		c, err := externalCluster(ctx, env)
		if err != nil {
			t.Fatalf("%v", err)
		}
		return c
	}

	c := &Cluster{Nodes: make([]*Server, clusterMasters)}
	for i := range c.Nodes {
		s, err := newServer(EnvClusterAddrs)
		if err != nil {
			t.Fatalf("%v", err)
		}
		t.Cleanup(s.cleanup)
		s.ready = c.WaitReady
		c.Nodes[i] = s
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, s := range c.Nodes {
		wg.Go(func() { errs[i] = s.start(ctx, true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redisserver: start cluster node: %v", err)
	}
	for _, s := range c.Nodes {
		c.Addrs = append(c.Addrs, s.Addr)
	}
	if err := c.join(ctx); err != nil {
		t.Fatalf("redisserver: join cluster: %v%s", err, c.logTails())
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("redisserver: cluster %v: %v%s", c.Addrs, err, c.logTails())
	}
	return c
}

// join gives each node an even share of the slots and a distinct config
// epoch, then introduces every node to every other.
func (c *Cluster) join(ctx context.Context) error {
	n := len(c.Nodes)
	for i, s := range c.Nodes {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if _, err := s.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE: %w", s.Addr, err)
		}
		if _, err := s.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", s.Addr, err)
		}
	}
	// Every pair meets directly: learning of a node through gossip can take
	// seconds, since each node pings another only about once a second.
	for i, a := range c.Nodes {
		for _, b := range c.Nodes[i+1:] {
			_, err := a.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(b.port), strconv.Itoa(b.busPort))
			if err != nil {
				return fmt.Errorf("%s: CLUSTER MEET %s: %w", a.Addr, b.Addr, err)
			}
		}
	}
	return nil
}

// externalCluster builds a Cluster for the comma-separated seed addresses in
// env and waits until it is healthy.
func externalCluster(ctx context.Context, env string) (*Cluster, error) {
	c := &Cluster{external: true}
	for _, a := range strings.Split(env, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.Addrs = append(c.Addrs, a)
		}
	}
	var errs []error
	for _, a := range c.Addrs {
		ranges, err := (&Server{Addr: a, external: true}).slotRanges(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range ranges {
			if !slices.ContainsFunc(c.Nodes, func(s *Server) bool { return s.Addr == r.addr }) {
				c.Nodes = append(c.Nodes, &Server{Addr: r.addr, external: true})
			}
		}
		break
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("redisserver: %s=%q: no seed answers CLUSTER SLOTS: %w", EnvClusterAddrs, env, errors.Join(errs...))
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("redisserver: %s=%q: %w", EnvClusterAddrs, env, err)
	}
	return c, nil
}

// WaitReady waits until every node reports cluster_state:ok (and, for a
// started cluster, knows all the nodes) and every node's CLUSTER SLOTS view
// is the same and covers all 16384 slots with masters from Nodes. It polls
// every 10ms and blocks until then or ctx is done; it then fails with the
// last reason the cluster was not ready. [Server.Restart] on a node calls it.
func (c *Cluster) WaitReady(ctx context.Context) error {
	for {
		err := c.check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w (last check: %v)", ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// check returns nil when the cluster is healthy as WaitReady describes, or
// the first reason it is not.
func (c *Cluster) check(ctx context.Context) error {
	var first []slotRange
	for i, s := range c.Nodes {
		info, err := s.clusterInfo(ctx)
		if err != nil {
			return err
		}
		if st := info["cluster_state"]; st != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", s.Addr, st)
		}
		if want := strconv.Itoa(len(c.Nodes)); !c.external && info["cluster_known_nodes"] != want {
			return fmt.Errorf("%s: cluster_known_nodes:%s, want %s", s.Addr, info["cluster_known_nodes"], want)
		}
		ranges, err := s.slotRanges(ctx)
		if err != nil {
			return err
		}
		next := 0
		for _, r := range ranges {
			if r.lo != next {
				return fmt.Errorf("%s: CLUSTER SLOTS: slot %d not covered", s.Addr, next)
			}
			if !slices.ContainsFunc(c.Nodes, func(n *Server) bool { return n.Addr == r.addr }) {
				return fmt.Errorf("%s: CLUSTER SLOTS: slots %d-%d served by %s, not one of %v", s.Addr, r.lo, r.hi, r.addr, c.Addrs)
			}
			next = r.hi + 1
		}
		if next != clusterSlots {
			return fmt.Errorf("%s: CLUSTER SLOTS: slot %d not covered", s.Addr, next)
		}
		if i == 0 {
			first = ranges
		} else if !slices.Equal(first, ranges) {
			return fmt.Errorf("%s: CLUSTER SLOTS %v disagrees with %s's %v", s.Addr, ranges, c.Nodes[0].Addr, first)
		}
	}
	return nil
}

// NodeFor returns the master that serves key's hash slot, found with CLUSTER
// KEYSLOT and CLUSTER SLOTS on the first node that answers. It blocks until
// a node answers or ctx is done; it fails when no node answers or the slot's
// master is not one of Nodes.
func (c *Cluster) NodeFor(ctx context.Context, key string) (*Server, error) {
	var errs []error
	for _, s := range c.Nodes {
		v, err := s.Do(ctx, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		slot, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("redisserver: %s: CLUSTER KEYSLOT: unexpected reply %#v", s.Addr, v)
		}
		ranges, err := s.slotRanges(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range ranges {
			if int64(r.lo) <= slot && slot <= int64(r.hi) {
				for _, n := range c.Nodes {
					if n.Addr == r.addr {
						return n, nil
					}
				}
				return nil, fmt.Errorf("redisserver: slot %d of key %q is served by %s, not one of %v", slot, key, r.addr, c.Addrs)
			}
		}
		return nil, fmt.Errorf("redisserver: %s: slot %d of key %q is not served", s.Addr, slot, key)
	}
	return nil, fmt.Errorf("redisserver: NodeFor %q: no node answers: %w", key, errors.Join(errs...))
}

// ScriptFlush runs [Server.ScriptFlush] on every node. It blocks until every
// node has replied or ctx is done, and returns every node's error joined.
func (c *Cluster) ScriptFlush(ctx context.Context) error {
	return c.each(func(s *Server) error { return s.ScriptFlush(ctx) })
}

// FlushAll runs [Server.FlushAll] on every node. It blocks until every node
// has replied or ctx is done, and returns every node's error joined.
func (c *Cluster) FlushAll(ctx context.Context) error {
	return c.each(func(s *Server) error { return s.FlushAll(ctx) })
}

// ClientKill runs [Server.ClientKill] on every node. It blocks until every
// node has replied or ctx is done, and returns every node's error joined.
func (c *Cluster) ClientKill(ctx context.Context, typ string) error {
	return c.each(func(s *Server) error { return s.ClientKill(ctx, typ) })
}

// Keys returns the union of [Server.Keys] over every node, sorted. It blocks
// until every node has been scanned or ctx is done, and fails on the first
// node that fails.
func (c *Cluster) Keys(ctx context.Context, pattern string) ([]string, error) {
	var keys []string
	for _, s := range c.Nodes {
		k, err := s.Keys(ctx, pattern)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// each runs f on every node in turn and joins the errors.
func (c *Cluster) each(f func(*Server) error) error {
	var errs []error
	for _, s := range c.Nodes {
		if err := f(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// logTails returns every started node's log tail, for failure messages.
func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, s := range c.Nodes {
		if s != nil && !s.external && s.Addr != "" {
			fmt.Fprintf(&b, "\n--- tail of %s's log ---\n%s", s.Addr, s.logTail())
		}
	}
	return b.String()
}

// slotRange is one line of CLUSTER SLOTS: slots lo..hi served by the master
// at addr.
type slotRange struct {
	lo, hi int
	addr   string
}

// slotRanges returns s's CLUSTER SLOTS view, sorted by first slot. A master
// reported without an IP is taken to be on s's host.
func (s *Server) slotRanges(ctx context.Context) ([]slotRange, error) {
	v, err := s.Do(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	bad := func() ([]slotRange, error) {
		return nil, fmt.Errorf("redisserver: %s: CLUSTER SLOTS: unexpected reply %#v", s.Addr, v)
	}
	arr, ok := v.([]any)
	if !ok {
		return bad()
	}
	ranges := make([]slotRange, 0, len(arr))
	for _, e := range arr {
		ent, ok := e.([]any)
		if !ok || len(ent) < 3 {
			return bad()
		}
		lo, ok1 := ent[0].(int64)
		hi, ok2 := ent[1].(int64)
		master, ok3 := ent[2].([]any)
		if !ok1 || !ok2 || !ok3 || len(master) < 2 {
			return bad()
		}
		ip, ok1 := master[0].(string)
		port, ok2 := master[1].(int64)
		if !ok1 || !ok2 {
			return bad()
		}
		if ip == "" || ip == "?" {
			ip, _, _ = net.SplitHostPort(s.Addr)
		}
		ranges = append(ranges, slotRange{lo: int(lo), hi: int(hi), addr: net.JoinHostPort(ip, strconv.FormatInt(port, 10))})
	}
	slices.SortFunc(ranges, func(a, b slotRange) int { return a.lo - b.lo })
	return ranges, nil
}

// clusterInfo runs CLUSTER INFO and parses the reply.
func (s *Server) clusterInfo(ctx context.Context) (map[string]string, error) {
	v, err := s.Do(ctx, "CLUSTER", "INFO")
	if err != nil {
		return nil, err
	}
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("redisserver: %s: CLUSTER INFO: unexpected reply %#v", s.Addr, v)
	}
	return parseInfo(str), nil
}
