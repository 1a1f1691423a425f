package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// OneWayDelay is the simulated network's one-way delay: a round trip of
// 500 µs, as between two hosts of one cloud zone.
const OneWayDelay = 250 * time.Microsecond

// DelayProxy forwards TCP connections from a loopback port to an upstream
// Redis, delaying every chunk of bytes by a fixed one-way delay in each
// direction (so a round trip gains twice that). Bytes keep their order; a
// chunk is held until its own deadline, so pipelined traffic is delayed,
// not serialized. A sleep here overshoots by about a millisecond, so a
// delay is slept only down to spinBelow and spun from there: accurate to a
// few microseconds, at the price of a busy core while a chunk is in flight
// (fine for one client at a time, the scenario it serves; many concurrent
// clients would measure the proxy).
type DelayProxy struct {
	ln       net.Listener
	upstream string
	delay    time.Duration
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

// spinBelow is the part of a delay spun rather than slept: a sleep may
// overshoot by about a millisecond (measured on the 2-core VM the figures
// come from: time.Sleep(50µs) took 1.12 ms).
const spinBelow = 1500 * time.Microsecond

// StartDelayProxy starts a proxy to upstream, stopped by tb.Cleanup.
func StartDelayProxy(tb testing.TB, upstream string, oneWay time.Duration) *DelayProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("delay proxy: listen: %v", err)
	}
	p := &DelayProxy{ln: ln, upstream: upstream, delay: oneWay}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// Addr is the proxy's address, for clients.
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

func (p *DelayProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *DelayProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.track(down)
		p.track(up)
		p.wg.Add(2)
		go p.pipe(up, down)
		go p.pipe(down, up)
	}
}

// chunk is bytes read at one moment, due at another.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk delayed by p.delay after it was read.
func (p *DelayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			waitUntil(c.due)
			if _, err := dst.Write(c.b); err != nil {
				for range q { // drain: the reader stops on its own
				}
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{b: slices.Clone(buf[:n]), due: time.Now().Add(p.delay)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
	_ = dst.Close()
	_ = src.Close()
}

// waitUntil returns at t: it sleeps most of the way and spins the rest.
func waitUntil(t time.Time) {
	if d := time.Until(t) - spinBelow; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
}

// MeasureRTT returns the median round trip of n PINGs through the proxy.
func (p *DelayProxy) MeasureRTT(ctx context.Context, n int) (time.Duration, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.Addr())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	rtts := make([]time.Duration, 0, n)
	buf := make([]byte, 64)
	for range n {
		t0 := time.Now()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return 0, err
		}
		got := 0
		for got < len("+PONG\r\n") {
			k, err := c.Read(buf[got:])
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
			got += k
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}
