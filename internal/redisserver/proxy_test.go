package redisserver_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ping sends PING on c and returns the reply line, or the read's error.
func ping(t *testing.T, c net.Conn, r *bufio.Reader) (string, error) {
	t.Helper()
	_, err := c.Write([]byte("PING\r\n"))
	require.NoError(t, err, "write PING")
	return r.ReadString('\n')
}

func TestProxyMuteAndStop(t *testing.T) {
	s := redisserver.StartStandalone(t)
	p := redisserver.StartProxy(t, s.Addr)
	c, err := net.Dial("tcp", p.Addr)
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	got, err := ping(t, c, r)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", got, "forwarded")

	p.Mute(true)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = ping(t, c, r)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "muted: no reply")
	p.Mute(false)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err = r.ReadString('\n')
	require.NoError(t, err, "the PING sent while muted, answered once unmuted")
	assert.Equal(t, "+PONG\r\n", got)

	p.Stop()
	_, err = r.ReadString('\n')
	assert.Error(t, err, "Stop cuts the connection")
	_, err = net.Dial("tcp", p.Addr)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "Stop closes the port: got %v", err)
	p.Stop() // a second Stop (and the cleanup's) is harmless
}

func TestDelayProxy(t *testing.T) {
	const oneWay = 20 * time.Millisecond
	s := redisserver.StartStandalone(t)
	p := redisserver.StartDelayProxy(t, s.Addr, oneWay)
	c, err := net.Dial("tcp", p.Addr)
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	start := time.Now()
	got, err := ping(t, c, r)
	rtt := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", got)
	assert.GreaterOrEqual(t, rtt, 2*oneWay, "a round trip gains the delay each way")
}
