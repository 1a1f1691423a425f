package redisserver

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLaunchPortInUse checks that a port taken between probe and bind is
// reported as retryable, with the server's log in the message, for both the
// client port and a cluster node's bus port.
func TestLaunchPortInUse(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"client", "bus"} {
		t.Run(name, func(t *testing.T) {
			s, err := newServer(EnvRedisAddr)
			require.NoError(t, err)
			defer os.RemoveAll(s.dir)
			listen := "127.0.0.1:0"
			if name == "bus" && !s.ver.hasClusterPort() {
				// Before 7.0 the bus port is the client port + 10000.
				s.port, s.busPort, err = freePortPair()
				require.NoError(t, err)
				listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.busPort))
			}
			l, err := net.Listen("tcp", listen)
			require.NoError(t, err)
			defer l.Close()
			taken := l.Addr().(*net.TCPAddr).Port

			switch {
			case name == "client":
				s.port = taken
			case s.ver.hasClusterPort():
				s.port, err = freePort()
				require.NoError(t, err)
				s.busPort = taken
			}
			s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))

			err = s.launch(context.Background())
			var se *startError
			require.True(t, errors.As(err, &se), "got %v", err)
			assert.True(t, se.addrInUse, "%v", err)
			assert.Contains(t, err.Error(), "Address already in use")
			assert.Nil(t, s.proc)
		})
	}
}
