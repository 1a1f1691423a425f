package redisserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Environment variables that point tests at servers started elsewhere.
const (
	// EnvRedisAddr holds the host:port of a standalone server that
	// StartStandalone returns instead of starting one.
	EnvRedisAddr = "SCRIPTLOCK_REDIS_ADDR"
	// EnvClusterAddrs holds comma-separated host:port addresses of the masters
	// of a Redis Cluster that StartCluster returns instead of starting one.
	EnvClusterAddrs = "SCRIPTLOCK_CLUSTER_ADDRS"
)

// healTimeout bounds a cluster node's wait for a healthy cluster after
// Restart when ctx has no earlier deadline.
const healTimeout = 30 * time.Second

// Server is one redis-server process, or an external server named by
// [EnvRedisAddr] or [EnvClusterAddrs]. Its methods are safe for concurrent
// use.
type Server struct {
	// Addr is the server's host:port. It stays the same across Restart.
	Addr string

	external bool
	dialer   Dial // how to connect to an external server (see Dial)
	bin      string
	ver      Version // of bin; zero for an external server
	dir      string
	port     int
	busPort  int // cluster bus port; 0 for a standalone server
	// ready, when set, runs after the process answers again on Restart
	// (a cluster node waits for a healthy cluster).
	ready func(ctx context.Context) error

	mu     sync.Mutex // guards proc and closed; held across Stop and Restart
	proc   *proc      // nil while stopped
	closed bool       // the cleanup has run

	idleMu sync.Mutex
	idle   []*conn // Do's open connections between calls (see maxIdle)
}

// StartStandalone starts a standalone redis-server on a free loopback port
// with no persistence (save "", appendonly no) in its own temporary
// directory, and registers a t.Cleanup that stops it (SIGTERM, SIGKILL after
// 2s) and then removes the directory. It blocks until the server answers PING
// and has finished loading, at most about 10s.
//
// When [EnvRedisURL] or [EnvRedisAddr] is set it returns a Server for that
// address (with the URL's user, password, database and TLS) instead,
// after checking that it answers PING; that server is never started, stopped
// or restarted by this package.
//
// It calls t.Fatalf when redis-server is not in PATH (the message names the
// fix), when the server does not start (the message holds its log's tail), or
// when the external server does not answer.
func StartStandalone(t testing.TB) *Server {
	t.Helper()
	if s, env, err := externalStandalone(); err != nil {
		t.Fatalf("%v", err)
	} else if s != nil {
		if err := pingExternal(s, env); err != nil {
			t.Fatalf("%v", err)
		}
		return s
	}
	s, err := newServer(EnvRedisAddr)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(s.cleanup)
	if err := s.start(context.Background(), false); err != nil {
		t.Fatalf("%v", err)
	}
	return s
}

// newServer finds redis-server and makes the server's temporary directory;
// env names the variable to mention when redis-server is missing.
func newServer(env string) (*Server, error) {
	bin, err := lookPath(env)
	if err != nil {
		return nil, err
	}
	ver, err := binaryVersion(bin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redisserver-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: make temp dir: %w", err)
	}
	// redis-server refuses to start when its ACL file is missing.
	if err := os.WriteFile(filepath.Join(dir, aclFileName), nil, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redisserver: make ACL file: %w", err)
	}
	return &Server{bin: bin, ver: ver, dir: dir}, nil
}

// pingExternal checks that an external server answers PING: tries of up
// to 5 s each, for up to 20 s (a TLS handshake on a loaded machine has
// taken over 5 s).
func pingExternal(s *Server, env string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := poll(ctx, func() error {
		try, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := s.Do(try, "PING")
		return err
	}); err != nil {
		return fmt.Errorf("redisserver: %s names %s, which does not answer PING: %w", env, s.Addr, err)
	}
	return nil
}

// cleanup stops the process and only then removes its directory.
func (s *Server) cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.proc.stop()
	s.proc = nil
	_ = os.RemoveAll(s.dir)
	s.idleMu.Lock()
	for _, c := range s.idle {
		_ = c.Close()
	}
	s.idle = nil
	s.idleMu.Unlock()
}

// own starts op on a server this process runs: it fails on an external
// server or after the test's cleanup has run, and otherwise returns with
// s.mu held.
func (s *Server) own(op string) error {
	if s.external {
		return s.externalErr(op)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("redisserver: %s %s: server already cleaned up", op, s.Addr)
	}
	return nil
}

// Stop stops the process (SIGTERM, SIGKILL after 2s) and leaves it stopped
// until [Server.Restart]; clients then see connection refused. It blocks
// until the process has exited. Stopping a stopped server does nothing. It
// fails on an external server or after the test's cleanup has run.
func (s *Server) Stop() error {
	if err := s.own("Stop"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.proc.stop()
	s.proc = nil
	return nil
}

// Kill ends the process with SIGKILL, as a crash would: no shutdown, no
// final save, and connected clients see their connections reset. It leaves
// the server stopped until [Server.Restart]. It blocks until the process has
// exited. Killing a stopped server does nothing. It fails on an external
// server or after the test's cleanup has run.
//
// A killed cluster master that stays down longer than the cluster node
// timeout (2s) is replaced by its replica, if it has one; Restart then brings
// it back as that replica's replica.
func (s *Server) Kill() error {
	if err := s.own("Kill"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if p := s.proc; p != nil && !p.exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	s.proc = nil
	return nil
}

// Restart stops the process (as [Server.Stop] does, if it runs) and starts it
// again on the same address with no data: keys and loaded scripts are lost.
// ACL users made with [Server.CreateACLUser] are kept, as a server restarted
// with its ACL file keeps them. It works as well after [Server.Kill] or
// [Server.Stop]. Clients that reconnect after it returns find the server at
// the same address; their old connections are closed.
//
// A cluster node keeps its nodes.conf, so it rejoins with the same id and
// slots (or as a replica, when its replica took over meanwhile); Restart
// then also waits until the whole cluster is healthy again (see
// [Cluster.WaitReady]), so clients see no CLUSTERDOWN afterwards; that takes
// a little over 2s, as Redis keeps a restarted master's cluster state at
// fail for 2s. A restarted master's replica resynchronises and so loses its
// data too.
//
// It blocks until the server answers PING (at most about 10s) and, for a
// cluster node, the cluster is healthy (bounded by ctx, or 30s when ctx has
// no deadline). It fails on an external server, after the test's cleanup has
// run, or when the server does not come back; the error then holds the tail
// of the server's log. Concurrent commands fail while the process is down.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.own("Restart"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.proc.stop()
	s.proc = nil
	// Nothing should be on disk, but make sure no data survives.
	_ = os.Remove(filepath.Join(s.dir, "dump.rdb"))
	_ = os.RemoveAll(filepath.Join(s.dir, "appendonlydir"))

	var err error
	for range startAttempts {
		err = s.launch(ctx)
		var se *startError
		if err == nil || !errors.As(err, &se) || !se.addrInUse {
			break
		}
		// Someone took our port while we were down; it may be brief.
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return err
	}
	if s.ready != nil {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, healTimeout)
			defer cancel()
		}
		if err := s.ready(ctx); err != nil {
			return fmt.Errorf("redisserver: Restart %s: %w", s.Addr, err)
		}
	}
	return nil
}

// External reports whether s is an external server (named by
// [EnvRedisAddr] or [EnvClusterAddrs], or a node of such a Cluster): one
// this package did not start and so never stops, kills or restarts.
func (s *Server) External() bool { return s.external }

// externalErr explains why op cannot run on an external server.
func (s *Server) externalErr(op string) error {
	return fmt.Errorf("redisserver: %s %s: external server (named by %s or %s), not started by this package", op, s.Addr, EnvRedisAddr, EnvClusterAddrs)
}

// Launch is StartStandalone for code without a testing.TB, such as a
// TestMain that serves runnable examples: it returns the started (or
// external) server and a stop function that stops it and removes its
// directory. It fails, with the same messages as StartStandalone, instead
// of calling t.Fatalf.
func Launch(ctx context.Context) (s *Server, stop func(), err error) {
	if s, env, err := externalStandalone(); err != nil {
		return nil, nil, err
	} else if s != nil {
		if err := pingExternal(s, env); err != nil {
			return nil, nil, err
		}
		return s, func() {}, nil
	}
	s, err = newServer(EnvRedisAddr)
	if err != nil {
		return nil, nil, err
	}
	if err := s.start(ctx, false); err != nil {
		s.cleanup()
		return nil, nil, err
	}
	return s, s.cleanup, nil
}

// Runner is what Main runs: a *testing.M, or a wrapper around one.
type Runner interface{ Run() int }

// Main is a TestMain around one server (Launch): it sets *addr to the
// server's address, runs m, stops the server and exits with m's code.
// after, if not nil, runs once the tests passed and fails the run on an
// error (a goroutine left behind). label names the test binary in a
// message, such as the one for a redis-server that does not start.
func Main(m Runner, label string, addr *string, after func() error) {
	os.Exit(run(m, label, addr, after))
}

func run(m Runner, label string, addr *string, after func() error) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, stop, err := Launch(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: starting redis-server: %v\n", label, err)
		return 1
	}
	*addr = srv.Addr
	code := m.Run()
	stop()
	if code == 0 && after != nil {
		if err := after(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", label, err)
			return 1
		}
	}
	return code
}
