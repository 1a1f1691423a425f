package redisserver_test

import (
	"strings"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBeginMigration holds a slot mid-move: keys present on the source are
// served there, a command with a missing key gets ASK and one with some of
// its keys missing gets TRYAGAIN; Finish moves the keys and the slot.
func TestBeginMigration(t *testing.T) {
	t.Parallel()
	c := redisserver.StartCluster(t)
	ctx := testCtx(t)
	const present, missing = "{held}here", "{held}new"
	slot, from, to := slotMove(ctx, t, c, present)

	m, err := c.BeginMigration(ctx, slot, to)
	require.NoError(t, err, "call: BeginMigration(%d, %s)", slot, to.Addr)
	assert.Same(t, from, m.From())
	assert.Same(t, to, m.To())

	got, err := from.Do(ctx, "GET", present)
	require.NoError(t, err, "call: GET %s on the source while MIGRATING", present)
	assert.Equal(t, "1", got)
	_, err = from.Do(ctx, "GET", missing)
	require.Error(t, err, "call: GET %s (missing) on the source while MIGRATING", missing)
	assert.True(t, strings.HasPrefix(err.Error(), "ASK "), "call: GET of a missing key: got %v, want ASK", err)
	_, err = from.Do(ctx, "MGET", present, missing)
	require.Error(t, err, "call: MGET of a present and a missing key while MIGRATING")
	ver, verr := from.Release(ctx)
	require.NoError(t, verr)
	if ver.AtLeast(7, 0) {
		assert.True(t, strings.HasPrefix(err.Error(), "TRYAGAIN"), "call: MGET: got %v, want TRYAGAIN", err)
	} else {
		// Before 7.0 the source redirects a multi-key command with missing
		// keys (ASK); the target then answers TRYAGAIN.
		assert.True(t, strings.HasPrefix(err.Error(), "ASK "), "call: MGET on %v: got %v, want ASK", ver, err)
	}

	_, err = c.BeginMigration(ctx, slot, from)
	require.Error(t, err, "call: BeginMigration to the slot's own master")

	require.NoError(t, m.Finish(ctx), "call: Finish")
	owner, err := c.NodeFor(ctx, present)
	require.NoError(t, err)
	assert.Same(t, to, owner)
	got, err = to.Do(ctx, "GET", present)
	require.NoError(t, err)
	assert.Equal(t, "1", got)
}
