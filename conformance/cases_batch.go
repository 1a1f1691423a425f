package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batchCases check the optional Batcher contract, for a driver that
// implements it.
var batchCases = []testCase{
	{
		name: "Scripter/Batch",
		rule: "A driver that implements locker.Batcher runs a batch of EVALSHA calls on keys in every slot range and returns one result per call, in order, " +
			"each as EvalSha returns it: a call of a script the server lacks fails alone with an error matching locker.ErrNoScript, a failing script alone " +
			"with the server's error, and the others run.",
		check: checkBatch,
	},
}

func checkBatch(t *testing.T, e *env) {
	b, ok := e.s.(locker.Batcher)
	if !ok {
		t.Logf("the driver does not implement locker.Batcher: auto-refresh refreshes one lease per call")
		return
	}
	src := fmt.Sprintf("-- %s\nreturn {KEYS[1], redis.call('HINCRBY', KEYS[1], 'n', ARGV[1])}", e.prefix)
	sha, err := e.s.ScriptLoad(e.ctx, src)
	require.NoError(t, err, "call: ScriptLoad")
	bad := e.key("batch-string")
	_, err = e.s.Eval(e.ctx, "return redis.call('SET', KEYS[1], 'x')", []string{bad}, nil)
	require.NoError(t, err, "call: Eval(SET)")

	var calls []locker.ScriptCall
	var want []any
	for i := range 40 { // hash tags spread over every slot range of a Cluster
		k := e.key(fmt.Sprintf("batch-%d", i))
		calls = append(calls, locker.ScriptCall{SHA1: sha, Keys: []string{k}, Args: []string{fmt.Sprint(i + 1)}})
		want = append(want, []any{k, int64(i + 1)})
	}
	unknown := len(calls)
	calls = append(calls, locker.ScriptCall{SHA1: sha1hex(src + "-- never loaded"), Keys: []string{e.key("batch-0")}, Args: []string{"1"}})
	wrongType := len(calls)
	calls = append(calls, locker.ScriptCall{SHA1: sha, Keys: []string{bad}, Args: []string{"1"}})
	calls = append(calls, locker.ScriptCall{SHA1: sha, Keys: []string{e.key("batch-0")}, Args: []string{"100"}})
	want = append(want, []any{e.key("batch-0"), int64(101)})

	res := b.EvalShaBatch(e.ctx, calls)
	require.Len(t, res, len(calls), "call: EvalShaBatch: one result per call")
	j := 0
	for i, r := range res {
		switch i {
		case unknown:
			assert.True(t, errors.Is(r.Err, locker.ErrNoScript), "call: EvalShaBatch: call %d (unknown script): got %v, want ErrNoScript", i, r.Err)
		case wrongType:
			require.Error(t, r.Err, "call: EvalShaBatch: call %d (HINCRBY on a string)", i)
			assert.Contains(t, r.Err.Error(), "WRONGTYPE", "call: EvalShaBatch: call %d: the server's error", i)
			assert.False(t, errors.Is(r.Err, locker.ErrNoScript), "call: EvalShaBatch: call %d matches ErrNoScript", i)
		default:
			require.NoError(t, r.Err, "call: EvalShaBatch: call %d", i)
			assert.Equal(t, want[j], r.Reply, "call: EvalShaBatch: call %d's reply, in order", i)
			j++
		}
	}
}
