module github.com/scriptlock/scriptlock/bench

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/mna/redisc v1.4.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/scriptlock/scriptlock v0.0.0-00010101000000-000000000000
	github.com/scriptlock/scriptlock/drivers/goredis v0.0.0-00010101000000-000000000000
	github.com/scriptlock/scriptlock/drivers/redigo v0.0.0-00010101000000-000000000000
	github.com/scriptlock/scriptlock/drivers/rueidis v0.0.0-00010101000000-000000000000
	github.com/scriptlock/scriptlock/drivers/valkeygo v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	github.com/valkey-io/valkey-go v1.0.79
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace (
	github.com/scriptlock/scriptlock => ..
	github.com/scriptlock/scriptlock/drivers/goredis => ../drivers/goredis
	github.com/scriptlock/scriptlock/drivers/redigo => ../drivers/redigo
	github.com/scriptlock/scriptlock/drivers/rueidis => ../drivers/rueidis
	github.com/scriptlock/scriptlock/drivers/valkeygo => ../drivers/valkeygo
)
