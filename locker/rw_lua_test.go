package locker_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwPrelude returns the shared prelude of an rw_*.lua script: the lines from
// "-- BEGIN rw prelude" to "-- END rw prelude".
func rwPrelude(t *testing.T, name string) string {
	t.Helper()
	src := luaScripts[name].src
	i := strings.Index(src, "-- BEGIN rw prelude")
	j := strings.Index(src, "-- END rw prelude")
	require.True(t, i >= 0 && j > i, "%s.lua has no rw prelude", name)
	return src[i:j]
}

// TestRWPreludeShared checks that every RW script carries the same prelude
// (time from Redis TIME, parsing and purging the hash, the helpers and the
// wake-up rule), so a fix to one is a fix to all.
func TestRWPreludeShared(t *testing.T) {
	want := rwPrelude(t, rwScripts[0])
	for _, name := range rwScripts {
		assert.Equal(t, want, rwPrelude(t, name), "%s.lua's prelude differs from %s.lua's", name, rwScripts[0])
	}
	assert.Contains(t, want, "redis.call('TIME')")
	var found []string
	for name := range luaScripts {
		if strings.HasPrefix(name, "rw_") {
			found = append(found, name)
		}
	}
	assert.ElementsMatch(t, rwScripts, found, "rwScripts lists every rw_*.lua")
}

// TestRWScriptsPublish checks that every RW script passes the wake channel
// as its last key, and that the scripts never publish elsewhere.
func TestRWScriptsPublish(t *testing.T) {
	for _, name := range rwScripts {
		src := luaScripts[name].src
		h := header(src)
		last := ""
		for _, line := range strings.Split(h, "\n") {
			if strings.HasPrefix(line, "-- KEYS[") {
				last = line
			}
		}
		assert.Contains(t, last, "wake channel", "%s.lua: the wake channel must be the last KEYS entry", name)
		assert.Equal(t, 1, strings.Count(src, "redis.call('SPUBLISH'"), "%s.lua publishes only in finish()", name)
	}
}
