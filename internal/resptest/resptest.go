// Package resptest is a minimal RESP2 client on the standard library, for
// the core module's tests: they run the scripts on a real redis-server
// without a third-party client in the core module's graph. A Client is a
// locker.Scripter (EVALSHA, EVAL, SCRIPT LOAD, with the reply vocabulary
// and the NOSCRIPT error of the contract) on a single server, and runs any
// other command with Do; Subscribe opens a pub/sub connection. It is not
// a driver: no Cluster, no optional interfaces, no pipelining.
package resptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scriptlock/scriptlock/locker"
)

// Error is an error reply of the server ("ERR ...", "NOSCRIPT ...").
type Error string

func (e Error) Error() string { return string(e) }

// Client sends commands to one server over a pool of connections. It is
// safe for concurrent use.
type Client struct {
	addr   string
	mu     sync.Mutex
	idle   []*conn
	closed bool
}

// New returns a Client for the server at addr (host:port); it dials on
// the first command.
func New(addr string) *Client { return &Client{addr: addr} }

// Close closes the idle connections; connections in use close when their
// command returns.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cn := range c.idle {
		_ = cn.nc.Close()
	}
	c.idle = nil
	return nil
}

type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func dial(ctx context.Context, addr string) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, nil
}

func (c *Client) get(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("resptest: client closed")
	}
	if n := len(c.idle); n > 0 {
		cn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	return dial(ctx, c.addr)
}

func (c *Client) put(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = cn.nc.Close()
		return
	}
	c.idle = append(c.idle, cn)
}

// Do sends one command and returns its reply: nil (a nil bulk string or
// array), int64, string (bulk and status replies), Error (an error
// reply nested in an array), []any. An error reply of the command itself
// is returned as the error, an Error. When ctx ends first, the error
// matches ctx.Err().
func (c *Client) Do(ctx context.Context, args ...any) (any, error) {
	cn, err := c.get(ctx)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	stop := watch(ctx, cn.nc)
	v, err := cn.roundTrip(args)
	stopped := stop()
	var re Error
	if err != nil && !errors.As(err, &re) || !stopped {
		// The connection's state is unknown (or its deadline was moved).
		_ = cn.nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, ctxErr(ctx, err)
	}
	c.put(cn)
	return v, err
}

// watch applies ctx's deadline and cancellation to nc until the returned
// function is called; that function reports whether ctx stayed live.
func watch(ctx context.Context, nc net.Conn) func() bool {
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	} else {
		_ = nc.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	return func() bool {
		if !stop() {
			return false
		}
		return ctx.Err() == nil
	}
}

func ctxErr(ctx context.Context, err error) error {
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		// The socket deadline (ctx's) may trip just before ctx's own timer.
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(dl) + 50*time.Millisecond):
		}
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

func (cn *conn) roundTrip(args []any) (any, error) {
	if err := writeCommand(cn.w, args); err != nil {
		return nil, err
	}
	if err := cn.w.Flush(); err != nil {
		return nil, err
	}
	v, err := readReply(cn.r)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(Error); ok {
		return nil, e
	}
	return v, nil
}

func writeCommand(w *bufio.Writer, args []any) error {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case []byte:
			s = string(v)
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		case time.Duration:
			s = strconv.FormatInt(v.Milliseconds(), 10)
		default:
			s = fmt.Sprint(v)
		}
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(s), s)
	}
	return nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("resptest: malformed line %q", line)
	}
	return line[:len(line)-2], nil
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, errors.New("resptest: empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return Error(line[1:]), nil
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("resptest: unknown reply type %q", line)
}

// nestedErr returns the first error reply nested in v.
func nestedErr(v any) error {
	switch x := v.(type) {
	case Error:
		return x
	case []any:
		for _, e := range x {
			if err := nestedErr(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func scriptArgs(cmd, script string, keys, args []string) []any {
	out := make([]any, 0, 3+len(keys)+len(args))
	out = append(out, cmd, script, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	for _, a := range args {
		out = append(out, a)
	}
	return out
}

func (c *Client) script(ctx context.Context, cmd, script string, keys, args []string) (any, error) {
	v, err := c.Do(ctx, scriptArgs(cmd, script, keys, args)...)
	if err == nil {
		err = nestedErr(v)
	}
	if err != nil {
		var re Error
		if errors.As(err, &re) && strings.HasPrefix(string(re), "NOSCRIPT") {
			return nil, fmt.Errorf("%w: %w", locker.ErrNoScript, err)
		}
		return nil, err
	}
	return v, nil
}

// EvalSha implements locker.Scripter.
func (c *Client) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	return c.script(ctx, "EVALSHA", sha, keys, args)
}

// Eval implements locker.Scripter.
func (c *Client) Eval(ctx context.Context, src string, keys, args []string) (any, error) {
	return c.script(ctx, "EVAL", src, keys, args)
}

// ScriptLoad implements locker.Scripter.
func (c *Client) ScriptLoad(ctx context.Context, src string) (string, error) {
	v, err := c.Do(ctx, "SCRIPT", "LOAD", src)
	if err != nil {
		return "", fmt.Errorf("resptest: SCRIPT LOAD on %s: %w", c.addr, err)
	}
	sha, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: resptest: SCRIPT LOAD reply %#v", locker.ErrUnexpectedReply, v)
	}
	return sha, nil
}

// Message is a message received on a subscription.
type Message struct {
	Channel, Payload string
}

// PubSub is a connection in subscribed state.
type PubSub struct {
	cn   *conn
	msgs chan Message
	done chan struct{}
}

// Subscribe opens a connection, sends cmd ("SUBSCRIBE" or "SSUBSCRIBE")
// for channel and waits for its confirmation; an error reply (an unknown
// command) is returned as an Error. Messages arrive on Messages until
// Close.
func (c *Client) Subscribe(ctx context.Context, cmd, channel string) (*PubSub, error) {
	cn, err := dial(ctx, c.addr)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	stop := watch(ctx, cn.nc)
	v, err := cn.roundTrip([]any{cmd, channel})
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		_ = cn.nc.Close()
		return nil, ctxErr(ctx, err)
	}
	if a, ok := v.([]any); !ok || len(a) != 3 {
		_ = cn.nc.Close()
		return nil, fmt.Errorf("resptest: %s confirmation %#v", cmd, v)
	}
	_ = cn.nc.SetDeadline(time.Time{})
	ps := &PubSub{cn: cn, msgs: make(chan Message, 1024), done: make(chan struct{})}
	go ps.loop()
	return ps, nil
}

func (ps *PubSub) loop() {
	defer close(ps.msgs)
	for {
		v, err := readReply(ps.cn.r)
		if err != nil {
			return
		}
		a, ok := v.([]any)
		if !ok || len(a) != 3 {
			continue
		}
		kind, _ := a[0].(string)
		if kind != "message" && kind != "smessage" {
			continue
		}
		ch, _ := a[1].(string)
		payload, _ := a[2].(string)
		select {
		case ps.msgs <- Message{Channel: ch, Payload: payload}:
		case <-ps.done:
			return
		}
	}
}

// Messages returns the channel the messages arrive on; it is closed after
// Close.
func (ps *PubSub) Messages() <-chan Message { return ps.msgs }

// Close closes the connection.
func (ps *PubSub) Close() error {
	close(ps.done)
	return ps.cn.nc.Close()
}

var _ locker.Scripter = (*Client)(nil)
