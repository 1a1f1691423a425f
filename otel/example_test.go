package otel_test

import (
	"context"
	"log"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"

	goredisdriver "github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
	lockotel "github.com/scriptlock/scriptlock/otel"
)

// ExampleObserver reports a Client's lock operations to the global
// OpenTelemetry providers (set them up with the SDK and an exporter first).
// The Lock runs under the caller's span, so its scriptlock.acquire and
// scriptlock.hold spans are children of daily-report.
func ExampleObserver() {
	obs, err := lockotel.Observer(&lockotel.Options{
		MeterProvider:  otel.GetMeterProvider(),
		TracerProvider: otel.GetTracerProvider(),
	})
	if err != nil {
		log.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rc.Close()
	client, err := locker.New(goredisdriver.New(rc), &locker.Options{Observer: obs})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	mu, err := client.NewMutex("report:daily", 30*time.Second, nil)
	if err != nil {
		log.Fatal(err)
	}

	ctx, span := otel.Tracer("example").Start(context.Background(), "daily-report")
	defer span.End()
	lease, err := mu.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// ... the report ...
	if err := lease.Unlock(ctx); err != nil {
		log.Print(err)
	}
}

// ExampleObserver_slog sends every Event both to OpenTelemetry and to a
// log: an Observer is a function, so two combine in a third.
func ExampleObserver_slog() {
	metrics, err := lockotel.Observer(nil) // the global providers
	if err != nil {
		log.Fatal(err)
	}
	logs := locker.SlogObserver(slog.Default())
	both := func(ctx context.Context, e locker.Event) {
		metrics(ctx, e)
		logs(ctx, e)
	}
	rc := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rc.Close()
	client, err := locker.New(goredisdriver.New(rc), &locker.Options{Observer: both})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}
