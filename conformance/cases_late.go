package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/scriptlock/scriptlock/locker"
)

func init() {
	faultCases = append(faultCases, testCase{
		name:  "Fault/LateAcquire",
		rule:  "An acquire call whose caller gave up (its context ended while the call was on its way) and that reaches Redis only after the caller's clean-up changes nothing: no grant, no queue entry; in default, FIFO and Owner modes.",
		check: checkLateAcquire,
	})
}

// lateScripter holds back one mutex acquire call once armed, as a client
// does that queued the command and then let its caller go: it cancels the
// caller's context and returns at once, and sends the call to Redis only
// when the test says so, after the caller's clean-up.
type lateScripter struct {
	locker.Scripter
	mu     sync.Mutex
	cancel context.CancelFunc // armed: the caller's cancel
	keys   int                // armed: hold the first call with this many keys
	send   chan struct{}      // closed by the test: send the held call
	reply  chan lateReply     // the held call's reply from Redis
}

type lateReply struct {
	r   any
	err error
}

// arm holds back the next call with nkeys keys (6: a mutex acquire, 3: a
// read-write acquire) and cancels the caller's context with cancel.
func (s *lateScripter) arm(nkeys int, cancel context.CancelFunc) {
	s.mu.Lock()
	s.cancel, s.keys = cancel, nkeys
	s.send = make(chan struct{})
	s.reply = make(chan lateReply, 1)
	s.mu.Unlock()
}

func (s *lateScripter) EvalSha(ctx context.Context, sha string, keys, args []string) (any, error) {
	s.mu.Lock()
	cancel, send, reply := s.cancel, s.send, s.reply
	held := cancel != nil && len(keys) == s.keys
	if held {
		s.cancel = nil
	}
	s.mu.Unlock()
	if !held {
		return s.Scripter.EvalSha(ctx, sha, keys, args)
	}
	go func() {
		<-send
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		r, err := s.Scripter.EvalSha(ctx, sha, keys, args)
		reply <- lateReply{r, err}
	}()
	cancel()
	return nil, ctx.Err()
}

func checkLateAcquire(t *testing.T, e *env) {
	late := &lateScripter{Scripter: e.s}
	c := e.clientOn(late, nil)
	other := e.client(nil)
	// Load the scripts: the held call goes out as the EVALSHA it was.
	warm, err := e.mutex(c, "late-warm", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock to load the scripts")
	require.NoError(t, warm.Unlock(e.ctx), "call: Unlock")
	wrw := e.rw(c, "late-warm-rw", 10*time.Second, nil)
	warm, err = wrw.TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock to load the scripts")
	require.NoError(t, warm.Unlock(e.ctx), "call: Unlock")
	warm, err = wrw.TryLock(e.ctx)
	require.NoError(t, err, "call: RWMutex TryLock to load the scripts")
	require.NoError(t, warm.Unlock(e.ctx), "call: Unlock")

	// deliver sends the held call and checks that Redis refused it.
	deliver := func(mode string) {
		t.Helper()
		close(late.send)
		var got lateReply
		select {
		case got = <-late.reply:
		case <-e.ctx.Done():
			t.Fatalf("%s: the held acquire call did not return", mode)
		}
		require.NoError(t, got.err, "%s: the held acquire call", mode)
		assert.Equal(t, []any{int64(0), int64(0)}, got.r, "%s: reply of the late acquire call: refused", mode)
	}
	free := func(mode, name string) {
		t.Helper()
		l, err := e.mutex(other, name, 10*time.Second, nil).TryLock(e.ctx)
		require.NoError(t, err, "%s: TryLock by another client after the late call: the lock must be free", mode)
		require.NoError(t, l.Unlock(e.ctx), "%s: Unlock", mode)
	}

	for _, opts := range []*locker.MutexOptions{nil, {Owner: "svc-" + e.prefix}, {Owner: "re-" + e.prefix, Reentrant: true}} {
		mode := "TryLock"
		if opts != nil {
			mode += ", Owner"
			if opts.Reentrant {
				mode += ", Reentrant"
			}
		}
		name := "late-" + mode
		ctx, cancel := context.WithCancel(e.ctx)
		late.arm(6, cancel)
		_, err = e.mutex(c, name, 10*time.Second, opts).TryLock(ctx)
		require.ErrorIs(t, err, context.Canceled, "%s: call: TryLock whose call is held back", mode)
		deliver(mode)
		free(mode, name)
	}

	// FIFO: the late call would have joined the queue behind the holder.
	holder, err := e.mutex(other, "late-fifo", 10*time.Second, nil).TryLock(e.ctx)
	require.NoError(t, err, "FIFO: call: TryLock by the holder")
	ctx, cancel := context.WithCancel(e.ctx)
	late.arm(6, cancel)
	_, err = e.mutex(c, "late-fifo", 10*time.Second, &locker.MutexOptions{FIFO: true}).Lock(ctx)
	require.ErrorIs(t, err, context.Canceled, "FIFO: call: Lock whose call is held back")
	deliver("FIFO")
	q := c.Key("late-fifo") + ":q"
	n, err := e.d.admin.Do(e.ctx, q, "ZCARD", q)
	require.NoError(t, err, "call: admin ZCARD %s", q)
	assert.Equal(t, int64(0), n, "FIFO: waiters queued after the late call")
	require.NoError(t, holder.Unlock(e.ctx), "FIFO: call: holder Unlock")
	free("FIFO", "late-fifo")

	// Read-write locks: a late read or write acquire grants nothing.
	for _, write := range []bool{false, true} {
		mode, name := "TryRLock", "late-rw-r"
		if write {
			mode, name = "RWMutex TryLock", "late-rw-w"
		}
		ctx, cancel := context.WithCancel(e.ctx)
		late.arm(3, cancel)
		rw := e.rw(c, name, 10*time.Second, nil)
		if write {
			_, err = rw.TryLock(ctx)
		} else {
			_, err = rw.TryRLock(ctx)
		}
		require.ErrorIs(t, err, context.Canceled, "%s: call whose acquire is held back", mode)
		deliver(mode)
		w, err := e.rw(other, name, 10*time.Second, nil).TryLock(e.ctx)
		require.NoError(t, err, "%s: RWMutex TryLock by another client after the late call: the lock must be free", mode)
		require.NoError(t, w.Unlock(e.ctx), "%s: Unlock", mode)
	}
}
