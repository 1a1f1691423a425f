package miniredistest_test

import (
	"testing"

	"github.com/redis/rueidis"

	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	"github.com/scriptlock/scriptlock/internal/miniredistest"
	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

// TestMiniredis runs every user-facing operation through this driver on
// miniredis, for users who unit-test with it. miniredis needs two rueidis
// options: DisableCache (it has no CLIENT TRACKING) and AlwaysRESP2 (it
// refuses other commands on a connection that subscribed, which rueidis
// shares under RESP3).
func TestMiniredisRueidis(t *testing.T) {
	miniredistest.Run(t, func(addr string) (locker.Scripter, func()) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, AlwaysRESP2: true})
		require.NoError(t, err)
		return rueidisdriver.New(c), c.Close
	})
}
