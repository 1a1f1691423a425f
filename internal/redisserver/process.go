package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// binary is the server executable looked up in PATH.
	binary = "redis-server"
	// logName is the server's stdout/stderr file inside its directory.
	logName = "redis.log"
	// nodesConfName is a cluster node's config file inside its directory.
	nodesConfName = "nodes.conf"
	// aclFileName is the server's ACL file inside its directory; ACL users
	// saved there survive Restart and Kill.
	aclFileName = "users.acl"
	// readyTimeout bounds the wait for a started process to answer: long,
	// for a machine whose cores other processes keep busy (a server that
	// printed "Ready" went unanswered for 11 s beside 8 spinning ones).
	readyTimeout = 30 * time.Second
	// stopGrace is how long a process has to exit after SIGTERM.
	stopGrace = 2 * time.Second
	// startAttempts bounds retries on a port taken between probe and bind.
	startAttempts = 5
)

// proc is one running redis-server process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's result, valid once done is closed
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to stopGrace, then sends SIGKILL; it blocks
// until the process has exited. Stopping an exited process does nothing.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a frozen server (Freeze) must run to exit
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = p.cmd.Process.Kill()
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startError is a failed start of a redis-server process.
type startError struct {
	addr      string
	msg       string
	logTail   string
	addrInUse bool // the port was taken: retrying on another port may work
}

func (e *startError) Error() string {
	return fmt.Sprintf("redisserver: redis-server on %s: %s\n--- tail of its log ---\n%s", e.addr, e.msg, e.logTail)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// busOffset is where a server without the cluster-port directive (before
// 7.0) puts its cluster bus: the client port + 10000.
const busOffset = 10000

// freePortPair returns a port p on 127.0.0.1 such that p and p + busOffset
// were both free a moment ago, for a cluster node of a server that has no
// cluster-port directive.
func freePortPair() (port, bus int, err error) {
	for range 100 {
		if port, err = freePort(); err != nil {
			return 0, 0, err
		}
		if port+busOffset > 65535 {
			// Take the pair below instead: both must still be free.
			port -= busOffset
			if port < 1024 {
				continue
			}
		}
		if portFree(port) && portFree(port+busOffset) {
			return port, port + busOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("redisserver: found no free port p with p+%d free too", busOffset)
}

// portFree reports whether port on 127.0.0.1 can be bound now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// args returns the redis-server command line for s.
func (s *Server) args() []string {
	a := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "notice",
		"--aclfile", filepath.Join(s.dir, aclFileName),
		// Above the default 511 (the kernel's net.core.somaxconn caps
		// it): beside a CPU hog, connects to live servers timed out while
		// the kernel counted listen-queue overflows (ListenOverflows).
		"--tcp-backlog", "4096",
	}
	if s.ver.hasDebugConfig() {
		// DEBUG (DEBUG SLEEP for stalls) is refused from 7.0 on unless
		// enabled; before 7.0 it is always allowed and the directive does
		// not exist.
		a = append(a, "--enable-debug-command", "local")
	}
	if s.busPort != 0 {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, nodesConfName),
			"--cluster-node-timeout", "2000",
			"--cluster-announce-ip", "127.0.0.1",
		)
		if s.ver.hasClusterPort() {
			// Before 7.0 the bus listens on the client port + 10000.
			a = append(a, "--cluster-port", strconv.Itoa(s.busPort))
		}
		a = append(a,
			// A replica's first sync starts at once instead of after 5s.
			"--repl-diskless-sync-delay", "0",
			// The master pings its replicas every second, so a replica's
			// offset turns non-zero soon and CLUSTER SLOTS lists it.
			"--repl-ping-replica-period", "1",
			// Replicas stay with their master (the Cluster's pairs hold) and
			// may always take over, whatever the age of their data.
			"--cluster-allow-replica-migration", "no",
			"--cluster-replica-validity-factor", "0",
		)
	}
	return a
}

// launch starts the process on s.port (and s.busPort) and waits until it
// answers PING with PONG, reports its own process id and has finished
// loading. It blocks until then, ctx is done or readyTimeout passes; on
// failure the process is stopped and a *startError is returned. The caller
// holds s.mu or owns s exclusively; s.Addr must already name s.port.
func (s *Server) launch(ctx context.Context) error {
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redisserver: open log: %w", err)
	}
	var logStart int64
	if fi, err := logf.Stat(); err == nil {
		logStart = fi.Size()
	}
	fmt.Fprintf(logf, "=== redisserver: starting %s %s at %s\n", s.bin, strings.Join(s.args(), " "), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logf.Close() // the child holds its own descriptor
	if err != nil {
		return fmt.Errorf("redisserver: start %s: %w", s.bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()

	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := waitReady(ctx, s.Addr, p); err != nil {
		p.stop()
		return &startError{
			addr:      s.Addr,
			msg:       err.Error(),
			logTail:   s.logTail(),
			addrInUse: p.exited() && strings.Contains(s.logSince(logStart), "Address already in use"),
		}
	}
	s.proc = p
	return nil
}

// waitReady polls addr until the server run by p answers. It blocks until
// then, p exits or ctx is done.
func waitReady(ctx context.Context, addr string, p *proc) error {
	want := strconv.Itoa(p.cmd.Process.Pid)
	// Stop probing at once when the process exits: whatever holds the port
	// then may accept connections and never answer.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("process exited before it was ready (%v)", p.err)
		}
		last = probe(ctx, addr, want)
		if last == nil {
			return nil
		}
		if p.exited() {
			continue // report the exit, not the cancelled probe
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last probe: %v)", ctx.Err(), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// probe checks once that the server at addr answers PING, is the process
// with id pid (not another server that took the port) and is not loading.
func probe(ctx context.Context, addr, pid string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := dial(ctx, addr, Dial{})
	if err != nil {
		return err
	}
	defer c.Close()
	if v, err := c.do(ctx, "PING"); err != nil {
		return err
	} else if v != "PONG" {
		return fmt.Errorf("PING replied %v", v)
	}
	v, err := c.do(ctx, "INFO")
	if err != nil {
		return err
	}
	s, _ := v.(string)
	info := parseInfo(s)
	if got := info["process_id"]; got != pid {
		return fmt.Errorf("answered by process %q, want %s", got, pid)
	}
	if got := info["loading"]; got != "0" {
		return fmt.Errorf("loading:%s", got)
	}
	return nil
}

// start picks free ports and launches the process, retrying on other ports
// when the chosen one is taken before the server binds it. cluster selects a
// cluster node (with a cluster bus port: any free one, or the client port +
// 10000 on a server before 7.0).
func (s *Server) start(ctx context.Context, cluster bool) error {
	var err error
	for range startAttempts {
		s.busPort = 0
		if cluster && !s.ver.hasClusterPort() {
			if s.port, s.busPort, err = freePortPair(); err != nil {
				return err
			}
		} else if s.port, err = freePort(); err != nil {
			return err
		}
		if cluster && s.busPort == 0 {
			for {
				if s.busPort, err = freePort(); err != nil {
					return err
				}
				if s.busPort != s.port {
					break
				}
			}
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		// A failed attempt may have left a node config naming the old port.
		_ = os.Remove(filepath.Join(s.dir, nodesConfName))
		err = s.launch(ctx)
		var se *startError
		if err == nil || !errors.As(err, &se) || !se.addrInUse {
			return err
		}
	}
	return err
}

// logPath is the file that holds the server's output.
func (s *Server) logPath() string { return filepath.Join(s.dir, logName) }

// logTail returns the last lines of the server's log, for failure messages.
func (s *Server) logTail() string {
	const max = 4096
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > max {
		b = b[len(b)-max:]
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// logSince returns the server's log from byte offset off on; it is empty
// when the log cannot be read.
func (s *Server) logSince(off int64) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil || off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
}

// lookPath finds redis-server or returns an error that names the fix; env is
// the variable that points at an existing server instead.
func lookPath(env string) (string, error) {
	p, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("redis-server not found in PATH: run scripts/test.sh (installs it with apt-get), or apt-get install redis-server redis-tools, or set %s (%v)", env, err)
	}
	return p, nil
}
