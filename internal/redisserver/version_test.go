package redisserver_test

import (
	"os"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersion(t *testing.T) {
	for out, want := range map[string]redisserver.Version{
		"Redis server v=6.2.16 sha=ad950e4c:0 malloc=libc bits=64 build=37cf8a19d53034a2\n":        {Product: "Redis", Major: 6, Minor: 2, Patch: 16},
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0": {Product: "Redis", Major: 7, Minor: 0, Patch: 15},
		"Valkey server v=8.0.1 sha=4fbab574:0 malloc=libc bits=64 build=a19e3e044d0e6063":          {Product: "Valkey", Major: 8, Minor: 0, Patch: 1},
	} {
		got, err := redisserver.ParseVersion(out)
		require.NoError(t, err, "%q", out)
		assert.Equal(t, want, got, "%q", out)
	}
	_, err := redisserver.ParseVersion("redis-cli 7.0.15")
	assert.Error(t, err)

	v62 := redisserver.Version{Product: "Redis", Major: 6, Minor: 2, Patch: 16}
	assert.Equal(t, "Redis 6.2.16", v62.String())
	assert.False(t, v62.ShardedPubSub())
	assert.True(t, v62.AtLeast(6, 2))
	assert.False(t, v62.AtLeast(7, 0))
	assert.True(t, redisserver.Version{Product: "Valkey", Major: 8}.ShardedPubSub())
	assert.True(t, redisserver.Version{Product: "Redis", Major: 7, Minor: 4}.AtLeast(7, 0))
}

// TestRelease checks that a started server reports the version of the
// binary the tests run, the one on PATH.
// (An external server named by SCRIPTLOCK_REDIS_ADDR answers from INFO.)
func TestRelease(t *testing.T) {
	t.Parallel()
	s := redisserver.StartStandalone(t)
	got, err := s.Release(testCtx(t))
	require.NoError(t, err)
	t.Logf("server: %v", got)
	if os.Getenv(redisserver.EnvRedisAddr) == "" {
		want, err := redisserver.BinaryVersion()
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
