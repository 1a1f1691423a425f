package redisserver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseURL(t *testing.T) {
	addr, d, err := redisserver.ParseURL("redis://app:s3cret@127.0.0.1:6390/2", "")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:6390", addr)
	assert.Equal(t, redisserver.Dial{Username: "app", Password: "s3cret", DB: 2}, d)

	addr, d, err = redisserver.ParseURL("redis://:pw@example.com", "")
	require.NoError(t, err)
	assert.Equal(t, "example.com:6379", addr, "the default port")
	assert.Equal(t, "", d.Username)
	assert.Equal(t, "pw", d.Password)

	addr, d, err = redisserver.ParseURL("rediss://[::1]:6380", "")
	require.NoError(t, err)
	assert.Equal(t, "[::1]:6380", addr)
	require.NotNil(t, d.TLS, "rediss:// means TLS")
	assert.Nil(t, d.TLS.RootCAs, "no CA file: the system roots")

	for _, bad := range []string{"http://host:1", "redis://", "redis://h:99999", "redis://h:1/x", "redis://h:1/-1"} {
		_, _, err := redisserver.ParseURL(bad, "")
		assert.Error(t, err, "ParseURL(%q)", bad)
	}
	_, _, err = redisserver.ParseURL("redis://app:s3cret@h:1/x", "")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret", "the password stays out of messages")

	dir := t.TempDir()
	_, _, err = redisserver.ParseURL("rediss://h:1", filepath.Join(dir, "missing.pem"))
	assert.Error(t, err, "a missing CA file")
	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate"), 0o600))
	_, _, err = redisserver.ParseURL("rediss://h:1", empty)
	assert.Error(t, err, "a CA file with no certificate")
}
