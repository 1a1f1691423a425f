package redisserver_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// connectionsReceived reads total_connections_received from INFO stats.
func connectionsReceived(t *testing.T, ctx context.Context, s *redisserver.Server) int {
	t.Helper()
	v, err := s.Do(ctx, "INFO", "stats")
	require.NoError(t, err)
	for _, line := range strings.Split(v.(string), "\r\n") {
		if n, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			i, err := strconv.Atoi(n)
			require.NoError(t, err)
			return i
		}
	}
	t.Fatal("INFO stats has no total_connections_received")
	return 0
}

// TestDoReusesConnections checks that Do keeps its connections between
// calls, replaces one the server closed (CLIENT KILL, a restart), and
// never reuses one whose call was cut short or that a command changed.
func TestDoReusesConnections(t *testing.T) {
	t.Parallel()
	s := redisserver.StartStandalone(t)
	ctx := testCtx(t)

	before := connectionsReceived(t, ctx, s)
	for range 20 {
		_, err := s.Do(ctx, "PING")
		require.NoError(t, err)
	}
	assert.Equal(t, before, connectionsReceived(t, ctx, s), "20 PINGs and an INFO after an INFO open no connection")

	// A command that changes its connection is sent on a connection of its own.
	_, err := s.Do(ctx, "CLIENT", "SETNAME", "named")
	require.NoError(t, err)
	v, err := s.Do(ctx, "CLIENT", "LIST")
	require.NoError(t, err)
	assert.NotContains(t, v, "name=named", "the named connection was closed, not kept")

	// The server closes the kept connections: the next call still answers.
	_, err = s.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err)
	_, err = s.Do(ctx, "PING")
	require.NoError(t, err, "PING after CLIENT KILL closed the kept connections")

	// A call cut short by its context leaves its connection out.
	_, err = s.Do(ctx, "SET", "k", "1")
	require.NoError(t, err)
	blocked, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Do(blocked, "BLPOP", "empty-list", "1")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	got, err := s.Do(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "1", got, "the reply of the next call is its own, not BLPOP's")
	time.Sleep(1100 * time.Millisecond) // BLPOP's timeout: its late nil reply went nowhere
	got, err = s.Do(ctx, "GET", "k")
	require.NoError(t, err)
	assert.Equal(t, "1", got)

	require.NoError(t, s.Restart(ctx))
	_, err = s.Do(ctx, "PING")
	require.NoError(t, err, "PING after a restart closed the kept connections")
}
