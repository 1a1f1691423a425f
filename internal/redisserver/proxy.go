package redisserver

import (
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections on a loopback port to a server. It can
// fall silent (Mute): it then accepts connections and reads nothing, so
// what clients send waits in the sockets, as behind a stuck proxy or a
// partition, and goes through in order once unmuted. It can delay every
// chunk of bytes by a fixed time each way (StartDelayProxy), and stop
// (Stop): its port then refuses connections and every connection through
// it is cut.
type Proxy struct {
	// Addr is the proxy's host:port: give it to a client instead of the
	// server's.
	Addr string

	target string
	delay  time.Duration
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	cond   *sync.Cond // signalled when muted or closed changes
	muted  bool
	closed bool
	conns  []net.Conn
}

// StartProxy starts a proxy to target (host:port) and registers a
// t.Cleanup that stops it.
func StartProxy(t testing.TB, target string) *Proxy { return StartDelayProxy(t, target, 0) }

// StartDelayProxy starts a proxy to target that delays each chunk of bytes
// by oneWay in each direction, so a round trip gains twice that. Bytes keep
// their order; a chunk is held until its own deadline, so pipelined traffic
// is delayed, not serialized. A sleep may overshoot by about a millisecond,
// so a delay is slept down to spinBelow and spun from there: accurate to a
// few microseconds, at the price of a busy core while a chunk is in flight.
func StartDelayProxy(t testing.TB, target string, oneWay time.Duration) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redisserver: proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, delay: oneWay, ln: ln}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Stop)
	return p
}

// Mute makes the proxy silent (true) or forwarding again (false).
func (p *Proxy) Mute(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.muted = on
	p.cond.Broadcast()
}

// Stop closes the proxy's port and every connection through it, and waits
// for its goroutines to end. It may be called more than once.
func (p *Proxy) Stop() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.cond.Broadcast()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // stopped
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_, _ = c.Close(), s.Close()
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
	defer func() { _, _ = dst.Close(), src.Close() }()
	w := io.Writer(dst)
	if p.delay > 0 {
		d := newDelayed(dst, p.delay)
		defer d.flush()
		w = d
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if !p.speaking() {
			return
		}
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// speaking waits while the proxy is muted, and reports whether it is
// still open.
func (p *Proxy) speaking() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.muted && !p.closed {
		p.cond.Wait()
	}
	return !p.closed
}

// delayed writes each chunk to dst a fixed delay after it was given.
type delayed struct {
	dst    net.Conn
	delay  time.Duration
	q      chan chunk
	done   chan struct{}
	failed atomic.Bool
}

// chunk is bytes read at one moment, due at another.
type chunk struct {
	b   []byte
	due time.Time
}

func newDelayed(dst net.Conn, delay time.Duration) *delayed {
	d := &delayed{dst: dst, delay: delay, q: make(chan chunk, 1024), done: make(chan struct{})}
	go d.send()
	return d
}

// Write queues a copy of b; it fails once a write to dst has failed.
func (d *delayed) Write(b []byte) (int, error) {
	if d.failed.Load() {
		return 0, net.ErrClosed
	}
	d.q <- chunk{b: slices.Clone(b), due: time.Now().Add(d.delay)}
	return len(b), nil
}

// flush waits until every queued chunk is written, or dropped after a
// failed write.
func (d *delayed) flush() {
	close(d.q)
	<-d.done
}

func (d *delayed) send() {
	defer close(d.done)
	for c := range d.q {
		if d.failed.Load() {
			continue // drain: the reader stops at its next Write
		}
		waitUntil(c.due)
		if _, err := d.dst.Write(c.b); err != nil {
			d.failed.Store(true)
		}
	}
}

// spinBelow is the part of a delay spun rather than slept: a sleep may
// overshoot by about a millisecond (measured on a 2-core VM:
// time.Sleep(50µs) took 1.12 ms).
const spinBelow = 1500 * time.Microsecond

// waitUntil returns at t: it sleeps most of the way and spins the rest.
func waitUntil(t time.Time) {
	if d := time.Until(t) - spinBelow; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}
