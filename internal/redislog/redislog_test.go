package redislog

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCounter(t *testing.T) {
	var c Counter
	require.Equal(t, "", c.Summary())
	for range 3 {
		c.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, "refused")
	}
	c.Printf(context.Background(), "redis: discarding bad PubSub connection: %s", "EOF")
	require.Equal(t, `go-redis logged 4 messages, not shown: "redis: connection pool: failed to dial after" x3, "redis: discarding bad PubSub connection" x1`, c.Summary())

	var out bytes.Buffer
	code := after{&c, runner(7), &out}.Run()
	require.Equal(t, 7, code)
	require.Equal(t, c.Summary()+"\n", out.String())
}

type runner int

func (r runner) Run() int { return int(r) }
