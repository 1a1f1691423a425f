package conformance

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultCases check recovery from faults injected behind the driver's back.
var faultCases = []testCase{
	{
		name:      "Fault/ScriptFlush",
		needs:     "empties every client's script cache (SCRIPT FLUSH)",
		rule:      "After SCRIPT FLUSH on every node, each operation (TryLock, Lock, TTL, Extend, Unlock, Claim) succeeds on its first call.",
		check:     checkScriptFlush,
		exclusive: "SCRIPT FLUSH empties every client's script cache",
	},
}

func checkScriptFlush(t *testing.T, e *env) {
	c := e.client(nil)
	m := e.mutex(c, "flush", 10*time.Second, nil)
	flush := func(before string) {
		t.Helper()
		require.NoError(t, e.d.admin.ScriptFlush(e.ctx), "call: admin SCRIPT FLUSH before %s", before)
	}

	flush("TryLock")
	l, err := m.TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock after SCRIPT FLUSH")
	flush("TTL")
	_, err = l.TTL(e.ctx)
	require.NoError(t, err, "call: TTL after SCRIPT FLUSH")
	flush("Extend")
	require.NoError(t, l.Extend(e.ctx, 20*time.Second), "call: Extend after SCRIPT FLUSH")
	flush("Unlock")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock after SCRIPT FLUSH")
	flush("Lock")
	l, err = m.Lock(e.ctx)
	require.NoError(t, err, "call: Lock after SCRIPT FLUSH")
	require.NoError(t, l.Unlock(e.ctx), "call: Unlock")
	flush("Claim")
	first, err := c.Claim(e.ctx, "flush-claim", time.Second)
	require.NoError(t, err, "call: Claim after SCRIPT FLUSH")
	assert.True(t, first, "call: Claim on a fresh key after SCRIPT FLUSH")
}
