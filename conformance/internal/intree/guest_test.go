package intree_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/conformance"
	"github.com/scriptlock/scriptlock/conformance/internal/hooks"
	"github.com/scriptlock/scriptlock/conformance/internal/intree/testdrivers"
	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// guestRules are the rules that change a server's settings (CONFIG SET,
// ACL users) or need a server the suite owns (a restart) or DEBUG: the
// ones TestGuest runs on a server the suite did not start.
var guestRules = []string{
	"Ack/ScripterAcks",
	"Ack/Fsync",
	"ACL/LeastPrivilege",
	"Chaos/Restart",
	"Outcome/Fence/ReadAfterRestart",
	"Stall/DebugSleep",
	"Stall/Deadline",
}

// guestNotApplicable are the guest rules that must report themselves not
// applicable there, each with a word its reason must hold.
var guestNotApplicable = map[string]string{
	"Chaos/Restart":                  redisserver.EnvRedisAddr,
	"Outcome/Fence/ReadAfterRestart": redisserver.EnvRedisAddr,
	"Stall/DebugSleep":               "DEBUG",
	"Stall/Deadline":                 "DEBUG",
}

// TestGuest checks that the suite is a good guest on a server it did not
// start: against a redis-server started here as a user would (appendonly
// yes, DEBUG refused: --enable-debug-command no, or DEBUG renamed away
// before Redis 7.0, which has no such directive), named as
// SCRIPTLOCK_REDIS_ADDR would name it, the rules that touch server state
// leave every setting (CONFIG GET *, appendonly still yes) and the ACL
// users (ACL LIST) as they found them, and those that cannot run there
// report themselves not applicable with the reason. It runs at the same
// time as the other tests, each driver on a server of its own.
func TestGuest(t *testing.T) {
	ownServersOnly(t)
	t.Parallel()
	for _, d := range testdrivers.All() {
		t.Run("driver="+d.Name, func(t *testing.T) {
			t.Parallel()
			srv := startByHand(t)
			before := guestState(t, srv)
			require.Equal(t, "yes", before.config["appendonly"], "CONFIG GET appendonly on the server started with --appendonly yes")
			t.Logf("before: appendonly %s; ACL LIST %q", before.config["appendonly"], before.acl)

			// The guest rules change settings: the full profile.
			got := hooks.RunStandaloneRulesOn(t, d, srv, conformance.ProfileFull, guestRules...)

			// Named like a rule of the standalone deployment, so that
			// scripts/compat.sh reports it in that cell.
			t.Run("deployment=standalone/Guest/LeftAsFound", func(t *testing.T) {
				t.Logf("rule: %s", guestRule)
				after := guestState(t, srv)
				t.Logf("after: appendonly %s; ACL LIST %q", after.config["appendonly"], after.acl)
				assert.Equal(t, "yes", after.config["appendonly"], "CONFIG GET appendonly after the rules: the suite must leave it as it found it")
				assert.Equal(t, before.acl, after.acl, "ACL LIST after the rules: the suite must add no user and leave every user as it found it")
				for k, v := range before.config {
					assert.Equal(t, v, after.config[k], "CONFIG GET %s after the rules (was %q)", k, v)
				}
				for k, v := range after.config {
					if _, ok := before.config[k]; !ok {
						t.Errorf("CONFIG GET * after the rules lists %s = %q, which it did not before", k, v)
					}
				}
				for _, r := range guestRules {
					o, ran := got[r]
					if !assert.True(t, ran, "rule %s did not run", r) {
						continue
					}
					if word, na := guestNotApplicable[r]; na {
						assert.True(t, o.Skipped, "rule %s on a server the suite did not start, without DEBUG: want it reported not applicable", r)
						assert.Contains(t, o.NotApplicable, word, "rule %s: the reason it is not applicable", r)
					} else {
						assert.False(t, o.Skipped, "rule %s: want it run on a server the suite did not start, got not applicable (%s)", r, o.NotApplicable)
					}
				}
			})
		})
	}
}

// guestRule is the sentence of the rule TestGuest checks.
const guestRule = "On a server the suite did not start (SCRIPTLOCK_REDIS_ADDR; started with appendonly yes and DEBUG refused), the rules that change settings or need a server of its own leave every setting (CONFIG GET *, appendonly still yes) and the ACL users (ACL LIST) as they found them, and those that cannot run there (a restart, DEBUG) report themselves not applicable with the reason."

// serverState is what TestGuest compares before and after the rules.
type serverState struct {
	config map[string]string // CONFIG GET *
	acl    []string          // ACL LIST
}

func guestState(t *testing.T, s *redisserver.Server) serverState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := serverState{config: map[string]string{}}
	v, err := s.Do(ctx, "CONFIG", "GET", "*")
	require.NoError(t, err, "call: CONFIG GET *")
	kv, _ := v.([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		val, _ := kv[i+1].(string)
		st.config[k] = val
	}
	v, err = s.Do(ctx, "ACL", "LIST")
	require.NoError(t, err, "call: ACL LIST")
	users, _ := v.([]any)
	for _, u := range users {
		st.acl = append(st.acl, fmt.Sprint(u))
	}
	return st
}

// startByHand starts the redis-server in PATH as a user would, not through
// internal/redisserver: appendonly yes, DEBUG refused, on a free loopback
// port in a temporary directory. It returns it as redisserver sees a
// server SCRIPTLOCK_REDIS_ADDR names (an external server), and stops it
// after t.
func startByHand(t *testing.T) *redisserver.Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "redis-server is not in PATH: install it (apt-get install redis-server) or run scripts/test.sh, which does")
	ver, err := redisserver.BinaryVersion()
	require.NoError(t, err, "call: redisserver.BinaryVersion")
	// A free port may be taken by another test's server before this one
	// binds it: then this server exits, and it is started again on
	// another port. Only a server that logged it is ready is ours.
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		args := []string{
			"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", t.TempDir(),
			"--save", "", "--appendonly", "yes", "--daemonize", "no", "--logfile", "",
		}
		if ver.AtLeast(7, 0) {
			args = append(args, "--enable-debug-command", "no")
		} else {
			args = append(args, "--rename-command", "DEBUG", "") // no enable-debug-command before 7.0
		}
		log := new(syncx.Buffer)
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = log, log
		require.NoError(t, cmd.Start(), "call: %s %s", bin, strings.Join(args, " "))
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ready, gone := false, false
		for deadline := time.Now().Add(10 * time.Second); !ready && !gone && time.Now().Before(deadline); {
			select {
			case <-exited:
				gone = true
			case <-time.After(20 * time.Millisecond):
				ready = strings.Contains(log.String(), "Ready to accept connections")
			}
		}
		if gone && attempt < 5 && strings.Contains(log.String(), "Address already in use") {
			t.Logf("redis-server started by hand on %s: the port was taken meanwhile; again on another", addr)
			continue
		}
		require.True(t, ready, "redis-server started by hand on %s is not ready after 10 s (exited: %v); its log:\n%s", addr, gone, log.String())
		var last error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			s, err := redisserver.Open("redis://"+addr, "")
			if err == nil {
				require.True(t, s.External(), "redisserver.Open(redis://%s): want an external server", addr)
				t.Logf("started by hand: %s %s (%s)", bin, strings.Join(args, " "), ver)
				return s
			}
			last = err
		}
		t.Fatalf("redis-server started by hand on %s does not answer after 10 s: %v\nits log:\n%s", addr, last, log.String())
		return nil
	}
}
