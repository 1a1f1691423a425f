package locker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRWPreludeShared checks that every RW script includes the one shared
// prelude, lua/rw_prelude.lua (time from Redis TIME, parsing and purging
// the hash, the helpers and the wake-up rule), so a fix to it is a fix to
// all of them.
func TestRWPreludeShared(t *testing.T) {
	want := locker.AssembleLua("rw_prelude") // with the shared prelude it includes
	require.Contains(t, want, "redis.call('TIME')")
	for _, name := range rwScripts {
		raw, err := os.ReadFile("lua/" + name + ".lua")
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(raw), "\n-- @include rw_prelude.lua\n"), "%s.lua includes the prelude once", name)
		assert.Contains(t, luaScripts[name].src, want, "%s.lua assembled holds the prelude", name)
	}
	var found []string
	for name := range luaScripts {
		if strings.HasPrefix(name, "rw_") {
			found = append(found, name)
		}
	}
	assert.ElementsMatch(t, rwScripts, found, "rwScripts lists every rw_*.lua")
}

// TestRWScriptsPublish checks that the RW scripts publish only through the
// prelude's finish, which applies the one wake-up rule (see also
// TestLuaWakeChannelInARGV for the channel it is given).
func TestRWScriptsPublish(t *testing.T) {
	for _, name := range rwScripts {
		src := luaScripts[name].src
		assert.Equal(t, 1, strings.Count(src, "redis.pcall('SPUBLISH'"), "%s.lua publishes only in finish()", name)
		assert.Equal(t, 1, strings.Count(src, "redis.call('PUBLISH'"), "%s.lua publishes only in finish()", name)
		assert.Contains(t, src, "finish(ARGV[", "%s.lua calls finish with its wake channel", name)
	}
}

// TestPublishWrittenOnce checks that the wake-up's SPUBLISH, with its
// PUBLISH fallback for servers without sharded pub/sub, is written in one
// file, shared_prelude.lua, and that every script that publishes gets it
// from there.
func TestPublishWrittenOnce(t *testing.T) {
	files, err := filepath.Glob("lua/*.lua")
	require.NoError(t, err)
	var naming []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.Contains(string(b), "SPUBLISH") {
			naming = append(naming, filepath.Base(f))
		}
	}
	assert.Equal(t, []string{"shared_prelude.lua"}, naming, "the files that name SPUBLISH")
	shared := locker.AssembleLua("shared_prelude")
	for name, s := range luaScripts {
		if strings.Contains(s.src, "publish(") {
			assert.Equal(t, 1, strings.Count(s.src, shared), "%s.lua publishes and holds shared_prelude.lua once", name)
		}
	}
}
