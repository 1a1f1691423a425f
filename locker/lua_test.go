package locker_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLuaScriptSet(t *testing.T) {
	var names []string
	for n := range luaScripts {
		names = append(names, n)
	}
	sort.Strings(names)
	assert.Subset(t, names, []string{"acquire", "claim", "dequeue", "extend", "pttl", "release"})
	assert.Subset(t, names, []string{"rw_cancel", "rw_downgrade", "rw_extend", "rw_lock", "rw_pttl", "rw_release", "rw_rlock"})
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
	keysRef = regexp.MustCompile(`KEYS\[\d+\]`)
	argvRef = regexp.MustCompile(`ARGV\[\d+\]`)
)

func TestLuaHeaders(t *testing.T) {
	for name, s := range luaScripts {
		t.Run(name, func(t *testing.T) {
			assert.True(t, strings.HasPrefix(s.src, "-- "+name+".lua:"), "starts with %q", "-- "+name+".lua:")
			h := header(s.src)
			assert.Contains(t, h, "KEYS[1]")
			assert.Contains(t, h, "ARGV[1]")
			assert.Contains(t, h, "Reply")
			// Every KEYS[i] and ARGV[i] the code uses is listed in the header.
			body := strings.TrimPrefix(s.src, h)
			for _, ref := range append(keysRef.FindAllString(body, -1), argvRef.FindAllString(body, -1)...) {
				assert.Contains(t, h, "-- "+ref, "%s is used but not documented", ref)
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
