package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// externalCluster builds a Cluster for the seed addresses addrs (named by
// the variable env), whose nodes are reached with the settings d, with one
// replica per master found in CLUSTER NODES when replicas is set, and
// waits until it is healthy.
func externalCluster(ctx context.Context, env string, addrs []string, d Dial, replicas bool) (*Cluster, error) {
	c := &Cluster{external: true, Addrs: addrs}
	var errs []error
	for _, a := range c.Addrs {
		seed := &Server{Addr: a, external: true, dialer: d}
		ranges, err := seed.slotRanges(ctx)
		if err == nil && replicas {
			var nodes []nodeLine
			if nodes, err = seed.clusterNodes(ctx); err == nil {
				if c.Nodes, c.Replicas, err = pairs(ranges, nodes, d); err != nil {
					return nil, fmt.Errorf("redisserver: %s: %w", env, err)
				}
			}
		} else if err == nil {
			for _, r := range ranges {
				if !slices.ContainsFunc(c.Nodes, func(s *Server) bool { return s.Addr == r.addr }) {
					c.Nodes = append(c.Nodes, &Server{Addr: r.addr, external: true, dialer: d})
				}
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
			continue
		}
		break
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("redisserver: %s (%v): no seed describes the cluster: %w", env, addrs, errors.Join(errs...))
	}
	if err := c.WaitReady(ctx); err != nil {
		return nil, fmt.Errorf("redisserver: %s (%v): %w", env, addrs, err)
	}
	return c, nil
}

// pairs returns the masters that serve the slots in ranges, in slot order,
// and the first healthy replica of each as CLUSTER NODES lists them. It
// fails, naming them, when some master has no healthy replica.
func pairs(ranges []slotRange, nodes []nodeLine, d Dial) (masters, replicas []*Server, err error) {
	var lonely []string
	for _, r := range ranges {
		if slices.ContainsFunc(masters, func(s *Server) bool { return s.Addr == r.addr }) {
			continue
		}
		i := slices.IndexFunc(nodes, func(n nodeLine) bool { return n.addr == r.addr })
		if i < 0 {
			return nil, nil, fmt.Errorf("CLUSTER NODES does not list %s, which CLUSTER SLOTS names", r.addr)
		}
		j := slices.IndexFunc(nodes, func(n nodeLine) bool { return n.masterID == nodes[i].id && n.healthyReplica() })
		if j < 0 {
			lonely = append(lonely, r.addr)
			continue
		}
		masters = append(masters, &Server{Addr: r.addr, external: true, dialer: d})
		replicas = append(replicas, &Server{Addr: nodes[j].addr, external: true, dialer: d})
	}
	if len(lonely) > 0 {
		return nil, nil, fmt.Errorf("master %v has no healthy replica in CLUSTER NODES; StartClusterWithReplicas needs one per master (unset %s and %s to start a cluster)", lonely, EnvClusterURLs, EnvClusterAddrs)
	}
	return masters, replicas, nil
}
