package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Do sends one command over a connection of its own (kept for a later
// call unless the command changes it: see maxIdle) and returns its reply: nil,
// int64, string or []any of these (an error nested in an array is a
// *RedisError element). It blocks until the reply arrives or ctx is done, so
// during [Server.Pause] it waits for the pause to end. A server error reply
// is returned as *[RedisError], unwrapped; network errors are wrapped with
// the address and command, and joined with ctx's error when ctx is done.
func (s *Server) Do(ctx context.Context, args ...string) (any, error) {
	if len(args) == 0 || !reusable(args[0]) {
		return s.doAs(ctx, nil, args)
	}
	c := s.idleConn()
	if c == nil {
		var err error
		if c, err = dial(ctx, s.Addr, s.dialer); err != nil {
			return nil, fmt.Errorf("redisserver: %s: %s: %w", s.Addr, args[0], err)
		}
	}
	v, err := c.do(ctx, args...)
	s.putIdle(c)
	if err != nil {
		return nil, s.cmdErr(args[0], err)
	}
	return v, nil
}

// maxIdle bounds the connections Do keeps open between calls: a test
// polling a key under load would otherwise open (and, with TLS, hand-shake)
// one per poll, and a starved server's accept queue fills.
const maxIdle = 4

// reusable reports whether a connection may serve another call after cmd:
// cmd leaves no state on it (a login, a database, a subscription, a
// transaction, a name, a mode).
func reusable(cmd string) bool {
	switch strings.ToUpper(cmd) {
	case "AUTH", "HELLO", "SELECT", "CLIENT", "SUBSCRIBE", "SSUBSCRIBE", "PSUBSCRIBE", "MONITOR",
		"MULTI", "EXEC", "WATCH", "READONLY", "READWRITE", "RESET", "QUIT", "SHUTDOWN", "SYNC", "PSYNC":
		return false
	}
	return true
}

// idleConn returns an open idle connection to s, or nil.
func (s *Server) idleConn() *conn {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	for len(s.idle) > 0 {
		c := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		if c.alive() {
			return c
		}
		_ = c.Close()
	}
	return nil
}

// putIdle keeps c for a later call, or closes it when its state is
// unknown or enough are kept.
func (s *Server) putIdle(c *conn) {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if c.spoiled || len(s.idle) >= maxIdle {
		_ = c.Close()
		return
	}
	s.idle = append(s.idle, c)
}

// doAs is Do on a connection that first sends AUTH auth... when auth is not
// empty.
func (s *Server) doAs(ctx context.Context, auth []string, args []string) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("redisserver: Do: no command")
	}
	c, err := dial(ctx, s.Addr, s.dialer)
	if err != nil {
		return nil, fmt.Errorf("redisserver: %s: %s: %w", s.Addr, args[0], err)
	}
	defer c.Close()
	if len(auth) > 0 {
		if _, err := c.do(ctx, append([]string{"AUTH"}, auth...)...); err != nil {
			return nil, s.cmdErr("AUTH", err)
		}
	}
	v, err := c.do(ctx, args...)
	if err != nil {
		return nil, s.cmdErr(args[0], err)
	}
	return v, nil
}

// cmdErr returns a server error reply unwrapped and wraps any other error
// with s's address and the command's name.
func (s *Server) cmdErr(cmd string, err error) error {
	var re *RedisError
	if errors.As(err, &re) {
		return re
	}
	return fmt.Errorf("redisserver: %s: %s: %w", s.Addr, cmd, err)
}

// ScriptFlush removes every cached Lua script (SCRIPT FLUSH), so the next
// EVALSHA of any script fails with NOSCRIPT. It blocks until the server
// replies or ctx is done.
func (s *Server) ScriptFlush(ctx context.Context) error {
	_, err := s.Do(ctx, "SCRIPT", "FLUSH")
	return err
}

// FlushAll removes every key from every database (FLUSHALL). It blocks until
// the server replies or ctx is done.
func (s *Server) FlushAll(ctx context.Context) error {
	_, err := s.Do(ctx, "FLUSHALL")
	return err
}

// ClientKill closes every client connection of type typ ("normal", "pubsub",
// "master" or "replica"; CLIENT KILL TYPE typ SKIPME yes). The admin
// connection that sends the command is skipped, so it does not fail by
// killing itself; killing no client is not an error. It blocks until the
// server replies or ctx is done.
func (s *Server) ClientKill(ctx context.Context, typ string) error {
	_, err := s.Do(ctx, "CLIENT", "KILL", "TYPE", typ, "SKIPME", "yes")
	return err
}

// Pause suspends every client command on the server for d (CLIENT PAUSE ms
// ALL, d rounded up to a millisecond); commands sent meanwhile, including
// this package's own later admin commands, block until the pause ends.
// The pause cannot be cut short: CLIENT UNPAUSE waits too. Pause itself
// returns as soon as the server has accepted it. It fails when d is negative.
func (s *Server) Pause(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("redisserver: Pause %s: negative duration %v", s.Addr, d)
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	_, err := s.Do(ctx, "CLIENT", "PAUSE", strconv.FormatInt(int64(ms), 10), "ALL")
	return err
}

// Keys returns the keys of database 0 that match the glob pattern, sorted
// and without duplicates. It uses SCAN MATCH, so it does not block the server
// for long; it blocks until the scan is complete or ctx is done. On a cluster
// node it sees only that node's keys.
func (s *Server) Keys(ctx context.Context, pattern string) ([]string, error) {
	c, err := dial(ctx, s.Addr, s.dialer)
	if err != nil {
		return nil, fmt.Errorf("redisserver: %s: SCAN: %w", s.Addr, err)
	}
	defer c.Close()
	var keys []string
	cursor := "0"
	for {
		v, err := c.do(ctx, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return nil, fmt.Errorf("redisserver: %s: SCAN: %w", s.Addr, err)
		}
		arr, ok := v.([]any)
		if !ok || len(arr) != 2 {
			return nil, fmt.Errorf("redisserver: %s: SCAN: unexpected reply %#v", s.Addr, v)
		}
		next, _ := arr[0].(string)
		batch, _ := arr[1].([]any)
		for _, k := range batch {
			if k, ok := k.(string); ok {
				keys = append(keys, k)
			}
		}
		if next == "0" || next == "" {
			break
		}
		cursor = next
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// Version returns the server's redis_version from INFO server, such as
// "7.0.15". It blocks until the server replies or ctx is done.
func (s *Server) Version(ctx context.Context) (string, error) {
	info, err := s.info(ctx, "server")
	if err != nil {
		return "", err
	}
	v, ok := info["redis_version"]
	if !ok {
		return "", fmt.Errorf("redisserver: %s: INFO server has no redis_version", s.Addr)
	}
	return v, nil
}

// info runs INFO (with optional section names) and parses the reply.
func (s *Server) info(ctx context.Context, sections ...string) (map[string]string, error) {
	v, err := s.Do(ctx, append([]string{"INFO"}, sections...)...)
	if err != nil {
		return nil, err
	}
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("redisserver: %s: INFO: unexpected reply %#v", s.Addr, v)
	}
	return parseInfo(str), nil
}
