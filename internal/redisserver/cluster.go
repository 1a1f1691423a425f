package redisserver

import (
	"context"
	"errors"
	"fmt"
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

// Cluster is a Redis Cluster of several masters, each with one replica or
// none. Its methods are safe for concurrent use.
type Cluster struct {
	// Addrs are the seed addresses (host:port) clients connect to: every
	// node of a started cluster (the masters first, then the replicas), or
	// the addresses in [EnvClusterAddrs].
	Addrs []string
	// Nodes are the masters, one Server each, in the order of the slot
	// ranges they were given at start. Admin commands on a node see only
	// that node's keys.
	//
	// [Cluster.Failover], and [Cluster.WaitReady] when a replica has taken
	// over by itself (after [Server.Kill] of its master), swap a master
	// with its replica here and in Replicas. Read the two fields directly
	// only while no such call may run; [Cluster.Masters] and
	// [Cluster.ReplicaOf] are safe at any time.
	Nodes []*Server
	// Replicas holds the replica of each master: Replicas[i] replicates
	// Nodes[i]. It is empty for a cluster without replicas.
	Replicas []*Server

	external bool
	mu       sync.Mutex // guards the elements of Nodes and Replicas
}

// External reports whether c is an existing Cluster named by
// [EnvClusterAddrs], not one this package started: its nodes are never
// stopped, killed or restarted by this package.
func (c *Cluster) External() bool { return c.external }

// StartCluster starts a Redis Cluster of three masters and no replicas, each
// a redis-server on free loopback ports (client and cluster bus), with
// cluster-node-timeout 2000, no persistence and its own temporary directory
// holding its nodes.conf (before 7.0, which has no cluster-port directive,
// the bus port is the client port + 10000). It assigns the slots evenly
// (CLUSTER ADDSLOTSRANGE, or ADDSLOTS before 7.0),
// joins every pair of nodes (CLUSTER MEET), and registers t.Cleanups that
// stop every node and then remove its directory. Addrs and Nodes are the
// three masters.
//
// It blocks until every node reports cluster_state:ok and every node's
// CLUSTER SLOTS covers all 16384 slots with the same owners, so clients that
// connect right after see neither CLUSTERDOWN nor a stale slot map. That
// takes a little over 2s, because Redis keeps a freshly started master's
// cluster state at fail for 2s.
//
// When [EnvClusterURLs] or [EnvClusterAddrs] is set it returns a Cluster
// for that existing cluster instead (its nodes reached with the URLs' user,
// password and TLS): Addrs are the listed addresses, Nodes the masters found in
// CLUSTER SLOTS, and it waits (at most 20s) until the cluster is healthy as
// above. Such nodes are never started, stopped or restarted by this package.
//
// It calls t.Fatalf when redis-server is not in PATH (the message names the
// fix), when a node does not start or the cluster does not become healthy
// within 20s (the message holds the nodes' log tails), or when the external
// cluster does not answer or is unhealthy.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, false)
}

// StartClusterWithReplicas is [StartCluster] with a replica for every
// master: six redis-servers, three masters with the slots and three
// replicas, Replicas[i] made a replica of Nodes[i] with CLUSTER REPLICATE.
// Addrs lists all six nodes, masters first. Every node keeps its replica
// ([Cluster.Failover] swaps the two), and a replica may take over whatever
// the age of its data, so a master killed with [Server.Kill] for longer than
// the node timeout (2s) is replaced by its replica.
//
// Besides what StartCluster waits for, it blocks until every replica is
// linked to its master (master_link_status:up) and every node's CLUSTER
// SLOTS lists each master's replica; that, too, takes a little over 2s.
//
// When [EnvClusterURLs] or [EnvClusterAddrs] is set it returns a Cluster
// for that existing cluster, as StartCluster does, with Replicas found in CLUSTER NODES (the
// first healthy replica of each master); it calls t.Fatalf when a master has
// no replica. It fails as StartCluster does otherwise.
func StartClusterWithReplicas(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, true)
}

// startCluster is StartCluster, with one replica per master when replicas
// is set.
func startCluster(t testing.TB, replicas bool) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if env := os.Getenv(EnvClusterURLs); env != "" {
		addrs, d, err := clusterURLs(env)
		if err == nil {
			var c *Cluster
			if c, err = externalCluster(ctx, EnvClusterURLs, addrs, d, replicas); err == nil {
				return c
			}
		}
		t.Fatalf("%v", err)
	}
	if env := os.Getenv(EnvClusterAddrs); env != "" {
		var addrs []string
		for _, a := range strings.Split(env, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		c, err := externalCluster(ctx, EnvClusterAddrs, addrs, Dial{}, replicas)
		if err != nil {
			t.Fatalf("%v", err)
		}
		return c
	}

	c := &Cluster{Nodes: make([]*Server, clusterMasters)}
	if replicas {
		c.Replicas = make([]*Server, clusterMasters)
	}
	for _, group := range [][]*Server{c.Nodes, c.Replicas} {
		for i := range group {
			s, err := newServer(EnvClusterAddrs)
			if err != nil {
				t.Fatalf("%v", err)
			}
			t.Cleanup(s.cleanup)
			s.ready = c.WaitReady
			group[i] = s
		}
	}
	all := c.servers()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() { errs[i] = s.start(ctx, true) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redisserver: start cluster node: %v", err)
	}
	for _, s := range all {
		c.Addrs = append(c.Addrs, s.Addr)
	}
	if err := c.join(ctx); err != nil {
		t.Fatalf("redisserver: join cluster: %v%s", err, c.logTails())
	}
	if err := c.replicate(ctx); err != nil {
		t.Fatalf("redisserver: attach replicas: %v%s", err, c.logTails())
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("redisserver: cluster %v: %v%s", c.Addrs, err, c.logTails())
	}
	return c
}

// join gives each master an even share of the slots and a distinct config
// epoch, then introduces every node to every other.
func (c *Cluster) join(ctx context.Context) error {
	n := len(c.Nodes)
	for i, s := range c.Nodes {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := s.addSlots(ctx, lo, hi); err != nil {
			return err
		}
		if _, err := s.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", s.Addr, err)
		}
	}
	// Every pair meets directly: learning of a node through gossip can take
	// seconds, since each node pings another only about once a second.
	all := c.servers()
	for i, a := range all {
		for _, b := range all[i+1:] {
			_, err := a.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(b.port), strconv.Itoa(b.busPort))
			if err != nil {
				return fmt.Errorf("%s: CLUSTER MEET %s: %w", a.Addr, b.Addr, err)
			}
		}
	}
	return nil
}

// addSlots assigns slots lo to hi to s: CLUSTER ADDSLOTSRANGE, or CLUSTER
// ADDSLOTS with every slot on a server before 7.0, which lacks it.
func (s *Server) addSlots(ctx context.Context, lo, hi int) error {
	if s.ver.hasAddSlotsRange() {
		if _, err := s.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE: %w", s.Addr, err)
		}
		return nil
	}
	args := []string{"CLUSTER", "ADDSLOTS"}
	for i := lo; i <= hi; i++ {
		args = append(args, strconv.Itoa(i))
	}
	if _, err := s.Do(ctx, args...); err != nil {
		return fmt.Errorf("%s: CLUSTER ADDSLOTS %d..%d: %w", s.Addr, lo, hi, err)
	}
	return nil
}

// replicate makes Replicas[i] a replica of Nodes[i] (CLUSTER REPLICATE),
// retrying while the replica does not know its master's id yet (the MEET
// handshake is still running). It blocks until every replica has accepted
// or ctx is done.
func (c *Cluster) replicate(ctx context.Context) error {
	for i, r := range c.Replicas {
		m := c.Nodes[i]
		id, err := m.myID(ctx)
		if err != nil {
			return err
		}
		err = poll(ctx, func() error {
			_, err := r.Do(ctx, "CLUSTER", "REPLICATE", id)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s (%s): %w", r.Addr, id, m.Addr, err)
		}
	}
	return nil
}

// poll calls f every 10ms until it returns nil or ctx is done; it then
// fails with ctx's error and f's last error.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %v)", ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Masters returns the current masters, as Nodes holds them, in a new slice.
// It is safe to call while [Cluster.Failover] runs.
func (c *Cluster) Masters() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.Nodes)
}

// ReplicaOf returns the replica of master, one of Nodes. It fails when
// master is not one of the current masters or the cluster has no replicas.
// It is safe to call while [Cluster.Failover] runs.
func (c *Cluster) ReplicaOf(master *Server) (*Server, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.Nodes, master)
	switch {
	case master == nil || i < 0:
		return nil, fmt.Errorf("redisserver: ReplicaOf: %s is not a master of the cluster", addrOf(master))
	case len(c.Replicas) == 0:
		return nil, fmt.Errorf("redisserver: ReplicaOf %s: the cluster has no replicas (use StartClusterWithReplicas)", master.Addr)
	}
	return c.Replicas[i], nil
}

// addrOf returns s's address, or "<nil>", for error messages.
func addrOf(s *Server) string {
	if s == nil {
		return "<nil>"
	}
	return s.Addr
}

// view returns copies of Nodes and Replicas.
func (c *Cluster) view() (masters, replicas []*Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.Nodes), slices.Clone(c.Replicas)
}

// servers returns every node: the masters, then the replicas.
func (c *Cluster) servers() []*Server {
	m, r := c.view()
	return append(m, r...)
}

// server returns the node at addr, or nil.
func (c *Cluster) server(addr string) *Server {
	for _, s := range c.servers() {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// isMaster reports whether s is one of the current masters.
func (c *Cluster) isMaster(s *Server) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.Nodes, s)
}

// promote records that replica r has taken over from its master: the two
// swap places in Nodes and Replicas. It does nothing when r is not a
// replica (already promoted).
func (c *Cluster) promote(r *Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.Replicas, r); i >= 0 {
		c.Nodes[i], c.Replicas[i] = c.Replicas[i], c.Nodes[i]
	}
}

// logTails returns every started node's log tail, for failure messages.
func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, s := range c.servers() {
		if s != nil && !s.external && s.Addr != "" {
			fmt.Fprintf(&b, "\n--- tail of %s's log ---\n%s", s.Addr, s.logTail())
		}
	}
	return b.String()
}
