module github.com/scriptlock/scriptlock/bench/peers

go 1.26.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.0
	github.com/redis/rueidis v1.0.79
	github.com/scriptlock/scriptlock v0.0.0-00010101000000-000000000000
	github.com/scriptlock/scriptlock/bench v0.0.0-00010101000000-000000000000
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/mna/redisc v1.4.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	github.com/scriptlock/scriptlock/drivers/goredis v0.0.0-00010101000000-000000000000 // indirect
	github.com/scriptlock/scriptlock/drivers/redigo v0.0.0-00010101000000-000000000000 // indirect
	github.com/scriptlock/scriptlock/drivers/rueidis v0.0.0-00010101000000-000000000000 // indirect
	github.com/scriptlock/scriptlock/drivers/valkeygo v0.0.0-00010101000000-000000000000 // indirect
	github.com/valkey-io/valkey-go v1.0.79 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/image v0.46.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace (
	github.com/scriptlock/scriptlock => ../..
	github.com/scriptlock/scriptlock/bench => ..
	github.com/scriptlock/scriptlock/drivers/goredis => ../../drivers/goredis
	github.com/scriptlock/scriptlock/drivers/redigo => ../../drivers/redigo
	github.com/scriptlock/scriptlock/drivers/rueidis => ../../drivers/rueidis
	github.com/scriptlock/scriptlock/drivers/valkeygo => ../../drivers/valkeygo
)

tool golang.org/x/perf/cmd/benchstat
