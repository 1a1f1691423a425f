package intree_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/conformance"
	"github.com/scriptlock/scriptlock/conformance/internal/hooks"
	"github.com/scriptlock/scriptlock/conformance/internal/intree/testdrivers"
	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/scriptlock/scriptlock/internal/syncx"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// minSafeRules is how many rules the safe profile must pass on a
// standalone server with one driver (the bar: a certification
// worth the name).
const minSafeRules = 100

// clearDeploymentEnv unsets, for the rest of t, every variable that names
// a deployment or a profile, so that the test chooses them.
func clearDeploymentEnv(t *testing.T) {
	t.Helper()
	for _, e := range []string{
		redisserver.EnvRedisURL, redisserver.EnvRedisAddr, redisserver.EnvClusterURLs,
		redisserver.EnvClusterAddrs, redisserver.EnvTLSCA, conformance.EnvSuite,
	} {
		t.Setenv(e, "")
	}
}

// ownServersOnly skips a test of the suite itself (not a rule) while a
// variable names your deployment: it runs at the same time as others, on
// servers it starts, which needs the variables unset.
func ownServersOnly(t *testing.T) {
	t.Helper()
	if set := redisserver.ExternalEnv(); len(set) > 0 {
		t.Skipf("checks the suite itself, on servers it starts; it does not run while %v names your deployment", set)
	}
}

// appPrefix is the prefix of the application whose user
// TestSafeProfileACLUser certifies, as docs/guarantees.md writes it.
const appPrefix = "scriptlock:"

// createAppUsers creates on srv the user "app" exactly as
// docs/guarantees.md recommends (appPrefix's key and channel patterns,
// -@all and conformance.ACLCommands, or ACLCommandsPlainPubSub on a server
// without sharded pub/sub) less the commands in without, and the user
// "suite" for the suite's own connections (+@all -@admin -@dangerous on
// the same patterns); it returns both as external Servers.
func createAppUsers(t *testing.T, srv *redisserver.Server, without ...string) (app, suite *redisserver.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmds := conformance.ACLCommands
	if v, err := srv.Do(ctx, "COMMAND", "INFO", "SSUBSCRIBE"); err != nil || len(v.([]any)) != 1 || v.([]any)[0] == nil {
		cmds = conformance.ACLCommandsPlainPubSub
	}
	rules := []string{"~" + appPrefix + "*", "&" + appPrefix + "*", "-@all"}
	for _, c := range cmds {
		if !slices.Contains(without, c) {
			rules = append(rules, c)
		}
	}
	pw := randomHex(t, 16)
	require.NoError(t, srv.CreateACLUser(ctx, "app", pw, rules...), "call: ACL SETUSER app %v", rules)
	spw := randomHex(t, 16)
	require.NoError(t, srv.CreateACLUser(ctx, "suite", spw, "~"+appPrefix+"*", "&"+appPrefix+"*", "+@all", "-@admin", "-@dangerous"), "call: ACL SETUSER suite")
	app, err := redisserver.Open(fmt.Sprintf("redis://app:%s@%s", pw, srv.Addr), "")
	require.NoError(t, err, "call: redisserver.Open(redis://app:<pw>@%s)", srv.Addr)
	return app, app.As("suite", spw)
}

// TestSafeProfileACLUser certifies a standalone server as its owner would,
// through the application's own ACL user: the server (started here) has
// the user "app" made exactly as docs/guarantees.md recommends for the
// prefix "scriptlock:", which the drivers connect as; the suite runs under
// that prefix (conformance.EnvPrefix) and its own checks log in as a
// second user (conformance.EnvSuiteUser). For each driver, every rule of
// the safe profile must pass, at least minSafeRules of them; afterwards
// the server must have refused nothing (ACL LOG empty) and run no command
// of @admin or @dangerous, nor SCRIPT FLUSH (INFO commandstats: neither
// calls nor rejected calls).
func TestSafeProfileACLUser(t *testing.T) {
	ownServersOnly(t)
	t.Parallel()
	for _, d := range testdrivers.All() {
		t.Run("driver="+d.Name, func(t *testing.T) {
			t.Parallel() // a server each: runs on one server take turns
			srv := redisserver.StartStandalone(t)
			app, suite := createAppUsers(t, srv)
			forbidden := adminCommands(t, srv)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := srv.Do(ctx, "ACL", "LOG", "RESET")
			require.NoError(t, err, "call: ACL LOG RESET")
			_, err = srv.Do(ctx, "CONFIG", "RESETSTAT")
			require.NoError(t, err, "call: CONFIG RESETSTAT")
			if os.Getenv(conformance.EnvSuite) == "" {
				profile, err := hooks.DefaultProfile(app)
				require.NoError(t, err)
				require.Equal(t, conformance.ProfileSafe, profile, "the default profile on a deployment the suite did not start")
			}
			checkSafeOutcomes(t, hooks.RunAsApplication(t, d, app, suite, appPrefix, hooks.Rules()...))

			ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			v, err := srv.Do(ctx, "INFO", "commandstats")
			require.NoError(t, err, "call: INFO commandstats")
			stats, _ := v.(string)
			for _, line := range strings.Split(stats, "\n") {
				name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
				if ok && forbidden[name] && name != "config|resetstat" { // the test's own, above
					t.Errorf("INFO commandstats after the safe profile: %s (want no call of a command of @admin or @dangerous, nor SCRIPT FLUSH)", strings.TrimSpace(line))
				}
			}
			v, err = srv.Do(ctx, "ACL", "LOG")
			require.NoError(t, err, "call: ACL LOG")
			assert.Empty(t, v, "ACL LOG after the safe profile: want no command, key or channel refused to the users app and suite")
		})
	}
}

// assertExpiring asserts that every key under appPrefix on srv expires
// within a minute: an access check deletes its probe key, and one cut
// short by its deadline leaves it expiring.
func assertExpiring(t *testing.T, srv *redisserver.Server, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := srv.Do(ctx, "KEYS", appPrefix+"*")
	require.NoError(t, err, "call: KEYS")
	list, _ := keys.([]any)
	for _, k := range list {
		ms, err := srv.Do(ctx, "PTTL", fmt.Sprint(k))
		require.NoError(t, err, "call: PTTL %v", k)
		n, _ := ms.(int64)
		assert.True(t, n == -2 || n > 0 && n <= 60000, "%s: %v has PTTL %v ms, want it expiring within a minute", what, k, ms)
	}
}

// TestSafeProfileAccessCheck takes one permission at a time away
// from the user TestSafeProfileACLUser certifies (a command, a channel
// pattern, the suite user's SCAN) and checks that the check the suite
// makes before its first rule fails within 10 s naming what is missing
// and the ACL line that grants it, and leaves no key behind. Like the
// other safe-profile tests, scripts/compat.sh leaves it to scripts/test.sh.
func TestSafeProfileAccessCheck(t *testing.T) {
	ownServersOnly(t)
	t.Parallel()
	srv := redisserver.StartStandalone(t)
	check := func(t *testing.T, app, suite *redisserver.Server) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		err := hooks.CheckAccess(ctx, app, suite, appPrefix) // bounded by ctx: 10 s
		t.Logf("the check took %v", time.Since(start).Round(time.Millisecond))
		assertExpiring(t, srv, "keys left by the check")
		return err
	}
	app, suite := createAppUsers(t, srv)
	require.NoError(t, check(t, app, suite), "the user as docs/guarantees.md recommends")
	t.Run("four at once", func(t *testing.T) { // a run's deployments on one server
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				assert.NoError(t, hooks.CheckAccess(ctx, app, suite, appPrefix))
			})
		}
		wg.Wait()
		assertExpiring(t, srv, "keys left by four checks at once")
	})
	for _, missing := range []string{"+hincrby", "+evalsha", "+zadd"} {
		t.Run("without="+missing, func(t *testing.T) {
			app, suite := createAppUsers(t, srv, missing)
			err := check(t, app, suite)
			require.Error(t, err, "the check with %s taken away", missing)
			t.Log(err)
			assert.Contains(t, err.Error(), strings.TrimPrefix(missing, "+")+": ", "the error names the command")
			assert.Contains(t, err.Error(), "ACL SETUSER app on >password ~"+appPrefix+"* &"+appPrefix+"* -@all +evalsha", "the error gives the ACL line")
		})
	}
	// checkLess runs the check once user has lost what rule takes away.
	checkLess := func(t *testing.T, user, rule string) error {
		t.Helper()
		app, suite := createAppUsers(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := srv.Do(ctx, "ACL", "SETUSER", user, rule)
		require.NoError(t, err, "call: ACL SETUSER %s %s", user, rule)
		err = check(t, app, suite)
		require.Error(t, err, "the check with %s %s", user, rule)
		return err
	}
	t.Run("channel outside the pattern", func(t *testing.T) {
		err := checkLess(t, "app", "resetchannels")
		assert.Regexp(t, `s?publish: `, err.Error(), "the error names the publish")
	})
	t.Run("suite user without SCAN", func(t *testing.T) {
		err := checkLess(t, "suite", "-scan")
		assert.Contains(t, err.Error(), "scan: ", "the error names SCAN")
		assert.Contains(t, err.Error(), conformance.EnvSuiteUser, "the error names the variable for the suite's user")
		assert.NotContains(t, err.Error(), "the drivers connect as", "the application's user is not to blame")
	})
}

// adminCommands returns the commands (and subcommands, "client|kill") of
// the categories @admin and @dangerous, and SCRIPT FLUSH, which the safe
// profile must never send.
func adminCommands(t *testing.T, srv *redisserver.Server) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[string]bool{"script|flush": true}
	for _, cat := range []string{"admin", "dangerous"} {
		v, err := srv.Do(ctx, "ACL", "CAT", cat)
		require.NoError(t, err, "call: ACL CAT %s", cat)
		names, _ := v.([]any)
		require.NotEmpty(t, names, "ACL CAT %s", cat)
		for _, n := range names {
			s, _ := n.(string)
			out[strings.ToLower(s)] = true
		}
	}
	for _, must := range []string{"debug", "keys", "flushall", "info"} {
		require.True(t, out[must], "ACL CAT admin/dangerous lists no %s: the check would miss it", must)
	}
	return out
}

// checkSafeOutcomes checks a safe-profile run: every rule either ran (and
// passed, or t failed) or was reported not applicable with a reason, at
// least minSafeRules ran, and the ones left out say why.
func checkSafeOutcomes(t *testing.T, got map[string]hooks.Outcome) {
	t.Helper()
	ran := 0
	for rule, o := range got {
		if !o.Skipped {
			ran++
			continue
		}
		assert.NotEmpty(t, o.NotApplicable, "rule %s was skipped without a reason", rule)
	}
	t.Logf("safe profile: %d rules ran, %d not applicable", ran, len(got)-ran)
	if run := flag.Lookup("test.run").Value.String(); strings.Count(run, "/") > 1 {
		t.Logf("-run %q selects rules: the counts are not checked", run)
		return
	}
	assert.GreaterOrEqual(t, ran, minSafeRules, "rules the safe profile ran on a standalone server")
	for _, r := range []string{"Stall/DebugSleep", "Chaos/ClientKill", "Fault/ScriptFlush", "ACL/LeastPrivilege", "Chaos/Restart"} {
		if assert.Contains(t, got, r) {
			assert.True(t, got[r].Skipped, "rule %s in the safe profile: want it not applicable", r)
			assert.Contains(t, got[r].NotApplicable, "safe profile", "rule %s: the reason", r)
		}
	}
}

// TestSafeProfileTLS certifies a TLS-only standalone server (--port 0
// --tls-port, with a certificate authority and a server certificate made
// here) reached as rediss://127.0.0.1:<port> with the authority's PEM
// file (SCRIPTLOCK_TLS_CA): every rule of the safe profile passes over
// TLS, at least minSafeRules. It runs at the same time as
// TestSafeProfileACLUser.
func TestSafeProfileTLS(t *testing.T) {
	ownServersOnly(t)
	t.Parallel()
	dir := t.TempDir()
	ca, cert, key := writeTestCerts(t, dir)
	port := freePort(t)
	startTLSServer(t, dir, port, ca, cert, key)

	srv, err := redisserver.Open(fmt.Sprintf("rediss://127.0.0.1:%d", port), ca)
	require.NoError(t, err, "call: redisserver.Open(rediss://127.0.0.1:%d) with the test's CA", port)
	require.NotNil(t, srv.Dial().TLS, "rediss:// dials TLS")
	t.Run("driver=goredis", func(t *testing.T) {
		got := hooks.RunStandaloneRulesOn(t, testdrivers.GoRedis, srv, conformance.ProfileSafe, hooks.Rules()...)
		checkSafeOutcomes(t, got)
	})
}

// startTLSServer starts the redis-server in PATH listening on port with
// TLS only, and stops it after t. A binary built without TLS fails the
// test, naming the fix.
func startTLSServer(t *testing.T, dir string, port int, ca, cert, key string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "redis-server is not in PATH: install it (apt-get install redis-server) or run scripts/test.sh, which does")
	args := []string{
		"--port", "0", "--tls-port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir,
		"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "",
	}
	var log syncx.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start(), "call: %s %s", bin, strings.Join(args, " "))
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			out := log.String()
			if strings.Contains(out, "TLS support") || strings.Contains(out, "tls-port") {
				t.Fatalf("%s was built without TLS, so it cannot serve rediss://: put a redis-server built with TLS first on PATH (Debian's redis-server package has it; from source: make BUILD_TLS=yes). Its log:\n%s", bin, out)
			}
			t.Fatalf("%s %s exited at start; its log:\n%s", bin, strings.Join(args, " "), out)
		default:
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			_ = c.Close()
			t.Logf("started: %s %s", bin, strings.Join(args, " "))
			return
		}
	}
	t.Fatalf("%s does not listen on %d after 10 s; its log:\n%s", bin, port, log.String())
}

// writeTestCerts writes a test certificate authority and a server
// certificate it signed, for 127.0.0.1 and localhost, into dir, and
// returns the PEM files' paths.
func writeTestCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "scriptlock test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	require.NoError(t, err)

	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	for path, block := range map[string]*pem.Block{
		ca:   {Type: "CERTIFICATE", Bytes: caDER},
		cert: {Type: "CERTIFICATE", Bytes: srvDER},
		key:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	}
	return ca, cert, key
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err, "call: find a free port")
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// clusterSafeGroups are the rule groups TestSafeProfileCluster runs: a
// sample that covers scripts, wake-ups, queues, reads of the suite's own
// keys and the key-leak check, kept short for scripts/test.sh.
var clusterSafeGroups = []string{"Scripter", "Mutex", "Wait", "FIFO", "Inspect"}

// TestSafeProfileCluster certifies a Cluster (started here, 3 masters
// with a replica each) named by SCRIPTLOCK_CLUSTER_URLS, every URL with
// the user "app" of TestSafeProfileACLUser: the safe profile's rules of
// clusterSafeGroups pass through that user, and the standalone deployment,
// which no variable names, is left out rather than started.
func TestSafeProfileCluster(t *testing.T) {
	ownServersOnly(t)
	clearDeploymentEnv(t)
	c := redisserver.StartClusterWithReplicas(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pw := randomHex(t, 16)
	require.NoError(t, c.CreateACLUser(ctx, "app", pw, "+@all", "-@admin", "-@dangerous", "~sltest*", "&sltest*"), "call: ACL SETUSER app on every node")
	var urls []string
	for _, a := range c.Addrs {
		urls = append(urls, fmt.Sprintf("redis://app:%s@%s", pw, a))
	}
	t.Setenv(redisserver.EnvClusterURLs, strings.Join(urls, ","))
	t.Run("driver=goredis", func(t *testing.T) {
		conformance.RunGroups(t, testdrivers.GoRedis, clusterSafeGroups...)
	})
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second) // the rules took the first one's time
	defer cancel()
	for _, n := range append(c.Masters(), c.Replicas...) {
		v, err := n.Do(ctx, "ACL", "LOG")
		require.NoError(t, err, "call: ACL LOG on %s", n.Addr)
		assert.Empty(t, v, "ACL LOG on %s after the safe profile: want nothing refused to the user app", n.Addr)
	}
}

// TestDriverWithoutConnect runs rules for a driver that sets only the
// older Driver fields (Standalone, Authenticated; no Connect), as a
// third-party driver written before Connect does: the suite connects it
// through them, the ACL rule included.
func TestDriverWithoutConnect(t *testing.T) {
	ownServersOnly(t)
	t.Parallel()
	plain := func(t testing.TB, c conformance.Conn) locker.Scripter {
		require.Empty(t, c.Username+c.Password, "the suite passes a login only to Authenticated")
		return testdrivers.GoRedis.Connect(t, c)
	}
	d := conformance.Driver{
		Name: "goredis-fields",
		Standalone: func(t testing.TB, addr string) locker.Scripter {
			return plain(t, conformance.Conn{Addrs: []string{addr}})
		},
		Authenticated: func(t testing.TB, addrs []string, cluster bool, user, password string) locker.Scripter {
			return testdrivers.GoRedis.Connect(t, conformance.Conn{Addrs: addrs, Cluster: cluster, Username: user, Password: password})
		},
	}
	srv := redisserver.StartStandalone(t)
	t.Run("driver="+d.Name, func(t *testing.T) {
		got := hooks.RunStandaloneRulesOn(t, d, srv, conformance.ProfileFull, "Mutex/OneWinner", "ACL/LeastPrivilege")
		for _, r := range []string{"Mutex/OneWinner", "ACL/LeastPrivilege"} {
			if assert.Contains(t, got, r) {
				assert.False(t, got[r].Skipped, "rule %s with Standalone and Authenticated: want it run, got not applicable (%s)", r, got[r].NotApplicable)
			}
		}
	})
}
