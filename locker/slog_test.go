package locker_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records decodes the JSON log lines written to buf so far.
func records(t *testing.T, buf *syncx.Buffer) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		out = append(out, m)
	}
	return out
}

// find returns the first record with message msg and lock name.
func find(rs []map[string]any, msg, lock string) map[string]any {
	for _, r := range rs {
		if r["msg"] == msg && r["lock"] == lock {
			return r
		}
	}
	return nil
}

// TestSlogObserver runs the slog adapter on a real server: a contended Lock
// logs its wait and attempts at debug level, an Unlock its hold time, and a
// lost lease a warning with its cause.
func TestSlogObserver(t *testing.T) {
	e := newRedisEnv(t)
	var buf syncx.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := clientOn(t, plainScripter{e.rdb}, &locker.Options{
		Prefix: e.prefix, MinRetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond,
		Observer: locker.SlogObserver(logger),
	})

	m := newMutex(t, c, "contended", 10*time.Second, nil)
	held, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock of the holder")
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = held.Unlock(e.ctx)
	}()
	l, err := m.Lock(e.ctx)
	require.NoError(t, err, "call: contended Lock")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")

	short := newMutex(t, c, "lost", 50*time.Millisecond, nil)
	lost, err := short.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock of the lease to lose")
	select {
	case <-lost.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("call: Lost() of a 50ms lease did not close within 5s")
	}

	rs := records(t, &buf)
	var acquire map[string]any
	for _, r := range rs {
		if r["msg"] == "scriptlock acquire" && r["lock"] == "contended" && r["level"] == "DEBUG" && r["attempts"].(float64) >= 2 {
			acquire = r
		}
	}
	require.NotNil(t, acquire, "a debug record of the contended Lock with attempts >= 2; records: %v", rs)
	wait := time.Duration(acquire["wait"].(float64)) // slog's JSON handler writes nanoseconds
	assert.GreaterOrEqual(t, wait, 90*time.Millisecond, "wait of the contended Lock: %v", acquire)
	assert.Equal(t, "mutex", acquire["mode"])
	assert.Equal(t, float64(l.Fence()), acquire["fence"])

	rel := find(rs, "scriptlock release", "contended")
	require.NotNil(t, rel, "a record of the Unlock; records: %v", rs)
	assert.Equal(t, "DEBUG", rel["level"])
	assert.Contains(t, rel, "held")

	loss := find(rs, "scriptlock loss", "lost")
	require.NotNil(t, loss, "a record of the loss; records: %v", rs)
	assert.Equal(t, "WARN", loss["level"])
	assert.Contains(t, loss["err"], "lease expired", "the loss's cause")
}
