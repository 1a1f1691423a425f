package redigo_test

import (
	"testing"

	"github.com/scriptlock/scriptlock/internal/redisserver"
)

// redisAddr is the redis-server TestMain starts for the runnable example.
var redisAddr string

func TestMain(m *testing.M) { redisserver.Main(m, "redigo example", &redisAddr, nil) }
