package redisserver

import (
	"context"
	"errors"
	"slices"
)

// ScriptFlush runs [Server.ScriptFlush] on every node, masters and
// replicas. It blocks until every node has replied or ctx is done, and
// returns every node's error joined.
func (c *Cluster) ScriptFlush(ctx context.Context) error {
	return each(c.servers(), func(s *Server) error { return s.ScriptFlush(ctx) })
}

// FlushAll runs [Server.FlushAll] on every master (replicas follow). It
// blocks until every master has replied or ctx is done, and returns every
// master's error joined.
func (c *Cluster) FlushAll(ctx context.Context) error {
	return each(c.Masters(), func(s *Server) error { return s.FlushAll(ctx) })
}

// ClientKill runs [Server.ClientKill] on every node, masters and replicas.
// It blocks until every node has replied or ctx is done, and returns every
// node's error joined.
func (c *Cluster) ClientKill(ctx context.Context, typ string) error {
	return each(c.servers(), func(s *Server) error { return s.ClientKill(ctx, typ) })
}

// Keys returns the union of [Server.Keys] over every master, sorted. It
// blocks until every master has been scanned or ctx is done, and fails on
// the first master that fails.
func (c *Cluster) Keys(ctx context.Context, pattern string) ([]string, error) {
	var keys []string
	for _, s := range c.Masters() {
		k, err := s.Keys(ctx, pattern)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k...)
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// each runs f on every server in turn and joins the errors.
func each(servers []*Server, f func(*Server) error) error {
	var errs []error
	for _, s := range servers {
		if err := f(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
