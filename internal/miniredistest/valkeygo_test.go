package miniredistest_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/internal/miniredistest"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// TestMiniredis runs every user-facing operation through this driver on
// miniredis (with the in-tree internal/miniredistest), for users who
// unit-test with it. miniredis needs two valkey-go options: DisableCache
// (it has no CLIENT TRACKING) and AlwaysRESP2 (it refuses other commands
// on a connection that subscribed, which valkey-go shares under RESP3).
func TestMiniredisValkeygo(t *testing.T) {
	miniredistest.Run(t, func(addr string) (locker.Scripter, func()) {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, AlwaysRESP2: true})
		require.NoError(t, err)
		return valkeygo.New(c), c.Close
	})
}
