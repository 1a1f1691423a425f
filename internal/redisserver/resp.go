package redisserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// RedisError is an error reply sent by the server, such as
// "ERR unknown command" or "MOVED 1234 127.0.0.1:7001".
type RedisError struct {
	// Msg is the server's message without the leading '-' and trailing CRLF.
	Msg string
}

// Error returns the server's message unchanged.
func (e *RedisError) Error() string { return e.Msg }

// conn is one RESP2 connection. It is not safe for concurrent use.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
	// spoiled: a call failed or was cut short, so the connection's state
	// (a half-read reply, a deadline in the past) is unknown.
	spoiled bool
}

// dial connects to addr with the settings of d (TLS, with addr's host as
// the server name; AUTH; SELECT); it blocks until connected and set up or
// ctx is done.
func dial(ctx context.Context, addr string, d Dial) (*conn, error) {
	nc, err := connect(ctx, addr)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if d.TLS != nil {
		cfg := d.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, ctxErr(ctx, fmt.Errorf("TLS handshake: %w", err))
		}
		nc = tc
	}
	c := &conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
	if d.Password != "" {
		auth := []string{"AUTH", d.Password}
		if d.Username != "" {
			auth = []string{"AUTH", d.Username, d.Password}
		}
		if _, err := c.do(ctx, auth...); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	if d.DB != 0 {
		if _, err := c.do(ctx, "SELECT", strconv.Itoa(d.DB)); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("SELECT %d: %w", d.DB, err)
		}
	}
	return c, nil
}

func (c *conn) Close() error { return c.nc.Close() }

// do sends one command and reads its reply. It blocks until the reply
// arrives or ctx is done; a server error reply is returned as *RedisError.
func (c *conn) do(ctx context.Context, args ...string) (any, error) {
	if dl, ok := ctx.Deadline(); ok {
		if err := c.nc.SetDeadline(dl); err != nil {
			return nil, err
		}
	}
	// Unblock I/O at once when ctx is cancelled.
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	c.spoiled = true
	defer func() { c.spoiled = !stop() || c.spoiled }()

	if err := writeCommand(c.w, args); err != nil {
		return nil, ctxErr(ctx, err)
	}
	if err := c.w.Flush(); err != nil {
		return nil, ctxErr(ctx, err)
	}
	v, err := readReply(c.r)
	if err != nil {
		var re *RedisError
		if errors.As(err, &re) {
			c.spoiled = false // a whole reply was read
			return nil, re
		}
		return nil, ctxErr(ctx, err)
	}
	c.spoiled = false
	return v, nil
}

// alive reports whether the idle c is still open with nothing to read:
// the server may have closed it (CLIENT KILL, a restart) meanwhile.
func (c *conn) alive() bool {
	if c.spoiled || c.r.Buffered() > 0 || c.w.Buffered() > 0 {
		return false
	}
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	return peekIdle(nc) == nil && c.nc.SetDeadline(time.Time{}) == nil
}

// connectTry bounds one TCP connect to a test server, where a handshake
// takes microseconds: beside a CPU hog, connects to live servers now and
// then went unanswered for 10 s. A fresh try, from another port, costs
// nothing.
const connectTry = 2 * time.Second

// connect dials addr, trying again while a try times out and ctx lives.
func connect(ctx context.Context, addr string) (net.Conn, error) {
	var nd net.Dialer
	for {
		tctx, cancel := context.WithTimeout(ctx, connectTry)
		nc, err := nd.DialContext(tctx, "tcp", addr)
		cancel()
		var ne net.Error
		if err == nil || ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
			return nc, err
		}
	}
}

// ctxErr joins ctx's error to err when ctx is done, so that both
// errors.Is(err, context.DeadlineExceeded) and the I/O cause are visible.
// An I/O timeout at or after ctx's deadline counts as the deadline even when
// ctx's own timer has not fired yet.
func ctxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil {
		var ne net.Error
		if dl, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(dl) {
			cerr = context.DeadlineExceeded
		}
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return errors.Join(cerr, err)
	}
	return err
}

// writeCommand encodes args as a RESP array of bulk strings.
func writeCommand(w *bufio.Writer, args []string) error {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		w.WriteByte('$')
		w.WriteString(strconv.Itoa(len(a)))
		w.WriteString("\r\n")
		w.WriteString(a)
		if _, err := w.WriteString("\r\n"); err != nil {
			return err
		}
	}
	return nil
}

// readReply decodes one RESP2 reply: simple and bulk strings become string,
// integers int64, null bulk strings and null arrays nil, arrays []any. A
// top-level error reply is returned as the error *RedisError; an error nested
// in an array (EXEC, scripts) becomes a *RedisError element.
func readReply(r *bufio.Reader) (any, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errors.New("redisserver: protocol error: empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, &RedisError{Msg: body}
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisserver: protocol error: bad integer %q", body)
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("redisserver: protocol error: bad bulk length %q", body)
		}
		if n == -1 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return nil, errors.New("redisserver: protocol error: bulk string not terminated by CRLF")
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("redisserver: protocol error: bad array length %q", body)
		}
		if n == -1 {
			return nil, nil
		}
		arr := make([]any, n)
		for i := range arr {
			v, err := readReply(r)
			var re *RedisError
			switch {
			case errors.As(err, &re):
				arr[i] = re
			case err != nil:
				return nil, err
			default:
				arr[i] = v
			}
		}
		return arr, nil
	default:
		return nil, fmt.Errorf("redisserver: protocol error: unexpected reply %q", line)
	}
}

// readLine reads one CRLF-terminated line and returns it without the CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && line == "" {
			return "", io.EOF
		}
		if errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("redisserver: protocol error: line not terminated by CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}

// parseInfo parses an INFO reply into field → value; section headers and
// blank lines are skipped.
func parseInfo(s string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}
