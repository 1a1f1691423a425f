package locker_test

// Static checks of the lua/*.lua files against their headers, and of the
// calls the core makes against those headers.

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// protocolScripts are the scripts of the locks and claims
// (locker.ScriptName gives these names); lua/ may hold more (operator
// tools), which the static checks cover as well.
var protocolScripts = []string{"abandon", "acquire", "claim", "dequeue", "extend", "pttl", "release", "unclaim",
	"rw_cancel", "rw_downgrade", "rw_extend", "rw_lock", "rw_pttl", "rw_release", "rw_rlock"}

// allScripts returns the names of every script in lua/, sorted.
func allScripts() []string {
	var names []string
	for n := range luaScripts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// leaseScripts act on a held lease: they take exactly one key, the lock's
// hash.
var leaseScripts = []string{"release", "extend", "pttl", "rw_release", "rw_extend", "rw_pttl", "rw_downgrade"}

func TestLuaScriptSet(t *testing.T) {
	assert.Subset(t, allScripts(), protocolScripts)
}

// header returns the leading block of "--" comment lines of src.
func header(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if !strings.HasPrefix(line, "--") {
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	keysRef  = regexp.MustCompile(`KEYS\[\d+\]`)
	argvRef  = regexp.MustCompile(`ARGV\[\d+\]`)
	headerKV = regexp.MustCompile(`^-- (KEYS|ARGV)\[(\d+)(\.\.)?\]\s+(.*)$`)
)

// params is what a script's header documents: its KEYS and ARGV entries
// (the first line of each, by index from 1) and whether ARGV goes on
// ("ARGV[n..]").
type params struct {
	keys, argv map[int]string
	variadic   bool
}

func parseHeader(t *testing.T, name string) params {
	t.Helper()
	p := params{keys: map[int]string{}, argv: map[int]string{}}
	for _, line := range strings.Split(header(luaScripts[name].src), "\n") {
		m := headerKV.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		i, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		if m[3] != "" {
			p.variadic = true
		}
		if m[1] == "KEYS" {
			p.keys[i] = m[4]
		} else {
			p.argv[i] = m[4]
		}
	}
	for _, m := range []map[int]string{p.keys, p.argv} {
		for i := 1; i <= len(m); i++ {
			require.Contains(t, m, i, "%s.lua: the header's entries are numbered 1..n", name)
		}
	}
	return p
}

// wakeArg returns the index of the ARGV entry documented as the wake
// channel, 0 when there is none.
func (p params) wakeArg() int {
	for i, d := range p.argv {
		if strings.Contains(d, "wake channel") {
			return i
		}
	}
	return 0
}

// channelArgs returns the ARGV entries documented as channels ("ARGV[i]"):
// the wake channel, and an election's observers' channel.
func (p params) channelArgs() []string {
	var out []string
	for i, d := range p.argv {
		if strings.Contains(d, "channel") {
			out = append(out, "ARGV["+strconv.Itoa(i)+"]")
		}
	}
	return out
}

func TestLuaHeaders(t *testing.T) {
	for _, name := range allScripts() {
		t.Run(name, func(t *testing.T) {
			s := luaScripts[name]
			assert.True(t, strings.HasPrefix(s.src, "-- "+name+".lua:"), "starts with %q", "-- "+name+".lua:")
			h := header(s.src)
			assert.Contains(t, h, "KEYS[1]")
			assert.Contains(t, h, "Reply")
			p := parseHeader(t, name)
			// Every KEYS[i] and ARGV[i] the code uses is listed in the header.
			body := strings.TrimPrefix(s.src, h)
			if argvRef.MatchString(body) {
				assert.Contains(t, h, "ARGV[1]")
			}
			for _, ref := range keysRef.FindAllString(body, -1) {
				i, _ := strconv.Atoi(ref[5 : len(ref)-1])
				assert.Contains(t, p.keys, i, "%s is used but not documented", ref)
			}
			for _, ref := range argvRef.FindAllString(body, -1) {
				i, _ := strconv.Atoi(ref[5 : len(ref)-1])
				if !p.variadic || i <= len(p.argv) {
					assert.Contains(t, p.argv, i, "%s is used but not documented", ref)
				}
			}
		})
	}
}

func TestLuaNoBooleanReplies(t *testing.T) {
	// Lua false arrives as nil and true as 1: scripts return integers.
	bad := regexp.MustCompile(`(?m)\breturn\s+(true|false|nil)\b`)
	for name, s := range luaScripts {
		assert.False(t, bad.MatchString(s.src), "%s.lua returns a Lua boolean or nil", name)
	}
}

// TestLuaWakeChannelInARGV checks that no script takes a channel as a key
// (a multi-key call with a missing key gets TRYAGAIN during a slot
// migration), and that every script that publishes publishes only on the
// ARGV entries its header documents as channels.
func TestLuaWakeChannelInARGV(t *testing.T) {
	publish := regexp.MustCompile(`redis\.p?call\('S?PUBLISH', ([^,]+),`)
	// The preludes' helpers publish on their argument: finish(wake) in
	// rw_prelude.lua, publish(ch, msg) and handover(..., wake) in
	// mutex_prelude.lua (which also wakes a waiter on its own channel,
	// ownChannel(wake, id), with the fence and the id),
	// publish(ch) and finish(wake) in sem_prelude.lua.
	helper := regexp.MustCompile(`\b(?:finish|publish|handover|passOn)\(([^)]*)\)`)
	params := []string{"wake", "ch", "ch, msg", "lock, q, qx, wake, gone", "lock, w, wake, gone", "ownChannel(wake, h", "ownChannel(wake, id", "wake .. ':' .. id"}
	for _, name := range allScripts() {
		p := parseHeader(t, name)
		for i, d := range p.keys {
			assert.NotContains(t, d, "channel", "%s.lua KEYS[%d] is a channel", name, i)
			assert.NotContains(t, d, ":wake", "%s.lua KEYS[%d] is a channel", name, i)
		}
		src := luaScripts[name].src
		var targets []string
		for _, m := range publish.FindAllStringSubmatch(src, -1) {
			if !slices.Contains(params, m[1]) {
				targets = append(targets, m[1])
			}
		}
		for _, m := range helper.FindAllStringSubmatch(src, -1) {
			if !slices.Contains(params, m[1]) { // not a definition
				// the wake channel: the last argument, but for the
				// hold that handover and passOn take after it, and
				// publish's payload
				args := strings.Split(m[1], ", ")
				fn, _, _ := strings.Cut(m[0], "(")
				if n := map[string]int{"handover": 5, "passOn": 4, "publish": 2}[fn]; len(args) == n {
					args = args[:len(args)-1]
				}
				targets = append(targets, args[len(args)-1])
			}
		}
		chans := p.channelArgs()
		for _, ch := range chans {
			assert.Contains(t, targets, ch, "%s.lua documents a channel it never publishes on", name)
		}
		for _, got := range targets {
			assert.Contains(t, chans, got, "%s.lua publishes on another argument than a channel its header documents", name)
		}
	}
}

// TestLuaLeaseScriptsOneKey checks that the scripts acting on a held mutex
// lease take one key, the lock's hash (and release.lua, for a FIFO lease,
// the queue's keys as well), and every read-write lock script two: its hash
// and its read expiries, which exist together (a script whose keys are
// partly missing in a slot being migrated is answered TRYAGAIN).
func TestLuaLeaseScriptsOneKey(t *testing.T) {
	one := append(append([]string{}, leaseScripts...), rwScripts...)
	for _, name := range one {
		p := parseHeader(t, name)
		assert.Contains(t, p.keys[1], "lock hash", "%s.lua: its key is the lock's hash", name)
		switch {
		case name == "release":
			assert.Len(t, p.keys, 3, "%s.lua: %v", name, p.keys)
			for i := 2; i <= 3; i++ {
				assert.Contains(t, p.keys[i], "(a FIFO lease only)", "%s.lua: KEYS[%d]", name, i)
			}
		case strings.HasPrefix(name, "rw_"):
			assert.Len(t, p.keys, 2, "%s.lua: %v", name, p.keys)
			assert.Contains(t, p.keys[2], "read expiries", "%s.lua: KEYS[2]", name)
		default:
			assert.Len(t, p.keys, 1, "%s.lua: %v", name, p.keys)
		}
	}
}

// TestCallsMatchHeaders checks every call the core makes against the
// called script's header: as many keys as documented (abandon's queue keys
// only for FIFO calls), at least the documented ARGV, the wake channel of
// the lock's name where the header puts it, and never a channel as a key.
func TestCallsMatchHeaders(t *testing.T) {
	c, f := newClient(t, nil)
	ctx := testCtx(t)
	exerciseMutex(t, ctx, c, f, time.Second)
	exerciseRW(t, ctx, c, f, time.Second)
	require.NoError(t, c.Close())
	extra := map[string]bool{}
	for _, call := range f.Calls() {
		if call.op == "load" {
			continue
		}
		p := parseHeader(t, call.name)
		nk := len(p.keys)
		if call.name == "abandon" && len(call.keys) == 2 {
			nk = 2 // KEYS[3] and KEYS[4] only for a FIFO call
			assert.Empty(t, call.args[4], "%v: no waiter without the queue keys", call)
		}
		if call.name == "release" && len(call.keys) == 1 {
			nk = 1 // KEYS[2] and KEYS[3] only for a FIFO lease
		}
		assert.Len(t, call.keys, nk, "%v: keys", call)
		need := len(p.argv)
		if p.variadic {
			need--
		}
		assert.GreaterOrEqual(t, len(call.args), need, "%v: arguments", call)
		if len(call.args) > len(p.argv) && !p.variadic {
			extra[call.name] = true
		}
		base := call.keys[0][:strings.IndexByte(call.keys[0], '}')+1]
		for _, k := range call.keys {
			assert.True(t, strings.HasPrefix(k, base), "%v: every key of one lock shares its hash tag", call)
			assert.False(t, strings.HasSuffix(k, ":wake"), "%v: a channel passed as a key", call)
		}
		if w := p.wakeArg(); w > 0 {
			assert.Equal(t, base+":wake", call.args[w-1], "%v: ARGV[%d] is the wake channel", call, w)
		}
	}
	for name := range extra {
		t.Logf("note: the core passes %s.lua more ARGV than its header lists", name)
	}
}
