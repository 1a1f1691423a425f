package redisserver

import (
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
)

// A server that falls silent keeps its connections open and answers
// nothing: a paused VM, a partition, a stuck proxy. Freeze and Proxy make
// one, each way.

// Freeze stops the server's process with SIGSTOP: connections stay open,
// commands are read by nobody and answered by nobody until Thaw. The
// test's cleanup thaws it before stopping it. It fails on an external
// server or one that is not running.
func (s *Server) Freeze() error { return s.signal("Freeze", syscall.SIGSTOP) }

// Thaw resumes a process stopped by Freeze (SIGCONT): it then runs the
// commands that waited in its sockets, in order.
func (s *Server) Thaw() error { return s.signal("Thaw", syscall.SIGCONT) }

func (s *Server) signal(op string, sig syscall.Signal) error {
	if s.external {
		return s.externalErr(op)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("redisserver: %s %s: the server is not running", op, s.Addr)
	}
	return s.proc.cmd.Process.Signal(sig)
}

// Proxy forwards TCP connections on a loopback port to a server, and can
// fall silent: while muted it accepts connections and reads nothing, so
// what clients send waits in the sockets, as behind a stuck proxy or a
// partition, and goes through in order once unmuted.
type Proxy struct {
	// Addr is the proxy's host:port: give it to a client instead of the
	// server's.
	Addr string

	target string
	ln     net.Listener
	mu     sync.Mutex
	cond   *sync.Cond
	muted  bool
	closed bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

// StartProxy starts a proxy to target (host:port) and registers a
// t.Cleanup that closes it and every connection through it.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redisserver: proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Mute makes the proxy silent (true) or forwarding again (false).
func (p *Proxy) Mute(on bool) {
	p.mu.Lock()
	p.muted = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

// pipe copies from src to dst until either side closes; what it read
// while the proxy is muted waits until it is unmuted.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.muted && !p.closed {
			p.cond.Wait()
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	p.cond.Broadcast()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}
