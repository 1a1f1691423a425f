package rueidis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/scriptlock/scriptlock/drivers/internal/subtest"
	rueidisdriver "github.com/scriptlock/scriptlock/drivers/rueidis"
	"github.com/scriptlock/scriptlock/internal/leak"
	"github.com/stretchr/testify/require"
)

// TestSubscribe checks fan-out, unsubscribe, payloads (subtest.Subscribe)
// and clean-up of Subscribe on one connection; the conformance suite
// covers the rest.
func TestSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr}})
	require.NoError(t, err)
	defer client.Close()
	// rueidis starts its connection's goroutines on first pub/sub use; they
	// belong to the client, not to the driver.
	leaks := []leak.Option{leak.IgnoreCurrent(),
		leak.IgnoreAnyFunction("github.com/redis/rueidis.(*pipe)._backgroundRead"),
		leak.IgnoreAnyFunction("github.com/redis/rueidis.(*pipe)._backgroundWrite")}
	s := rueidisdriver.New(client)

	subtest.Subscribe(t, ctx, s)
	leak.VerifyNone(t, leaks...)
}
