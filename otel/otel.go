package otel

import (
	"context"
	"errors"
	"fmt"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/scriptlock/scriptlock/locker"
)

// ScopeName is the instrumentation scope of the meter and the tracer that
// Observer uses.
const ScopeName = "github.com/scriptlock/scriptlock/otel"

// Options configures Observer. A nil *Options, and every zero field, means
// the default written at the end of the field's doc.
type Options struct {
	// MeterProvider makes the meter that records the metrics. Pass
	// go.opentelemetry.io/otel/metric/noop.NewMeterProvider() for traces
	// only. Default: the global MeterProvider (otel.GetMeterProvider), as
	// it is when Observer is called (the global one forwards to a provider
	// set later with otel.SetMeterProvider).
	MeterProvider metric.MeterProvider

	// TracerProvider makes the tracer that records the spans. Pass
	// go.opentelemetry.io/otel/trace/noop.NewTracerProvider() for metrics
	// only. Default: the global TracerProvider (otel.GetTracerProvider), as
	// it is when Observer is called.
	TracerProvider trace.TracerProvider

	// LockNameAttribute adds the lock's name as the attribute
	// scriptlock.lock.name to every metric and span, and keeps it in span
	// status descriptions. Every distinct name then makes its own time
	// series, so set it only when names are few (a fixed set of jobs, not
	// one per invoice). Default false: the name appears nowhere.
	LockNameAttribute bool
}

// Metric names.
const (
	MetricAcquireDuration = "scriptlock.lock.acquire.duration"
	MetricAcquireAttempts = "scriptlock.lock.acquire.attempts"
	MetricHoldDuration    = "scriptlock.lock.hold.duration"
	MetricExtends         = "scriptlock.lock.extends"
	MetricLeaseLost       = "scriptlock.lease.lost"
	MetricWakeups         = "scriptlock.wakeups"
	MetricScriptReloads   = "scriptlock.script.reloads"
	MetricCallRetries     = "scriptlock.call.retries"
)

// Span names.
const (
	SpanAcquire = "scriptlock.acquire"
	SpanHold    = "scriptlock.hold"
	SpanExtend  = "scriptlock.extend"
	SpanLoss    = "scriptlock.loss"
)

// Names of the events added to the span in an operation's context.
const (
	SpanEventLeaseLost = "scriptlock.lease.lost"
	SpanEventWakeup    = "scriptlock.wakeup"
	SpanEventReload    = "scriptlock.script.reload"
	SpanEventRetry     = "scriptlock.call.retry"
)

// Attribute keys.
const (
	// AttrLockName is the lock's name; only with Options.LockNameAttribute.
	AttrLockName attribute.Key = "scriptlock.lock.name"
	// AttrLockMode is the lock's mode: "mutex", "read", "write",
	// "semaphore", "multi" or "election" (locker.Event.Mode).
	AttrLockMode attribute.Key = "scriptlock.lock.mode"
	// AttrOutcome is how an acquisition, Unlock or Extend ended.
	AttrOutcome attribute.Key = "scriptlock.outcome"
	// AttrLossCause is why a lease was lost: "expired", "held_by_other" or
	// "other".
	AttrLossCause attribute.Key = "scriptlock.loss.cause"
	// AttrScriptName names a script (reloads, retries).
	AttrScriptName attribute.Key = "scriptlock.script.name"
	// AttrFence is a lease's fence (spans and span events only).
	AttrFence attribute.Key = "scriptlock.lock.fence"
	// AttrAttempts is an acquisition's number of acquire calls (spans only).
	AttrAttempts attribute.Key = "scriptlock.lock.acquire.attempts"
	// AttrErrorType is the semantic conventions' error.type: a short,
	// low-cardinality name of a failure.
	AttrErrorType attribute.Key = "error.type"
)

// Values of AttrOutcome.
const (
	OutcomeGranted     = "granted"
	OutcomeNotObtained = "not_obtained"
	OutcomeReleased    = "released"
	OutcomeExtended    = "extended"
	OutcomeExpired     = "expired"
	OutcomeHeldByOther = "held_by_other"
	OutcomeError       = "error"
)

// Histogram bucket boundaries, advisory: a View can replace them. An
// uncontended acquisition takes two round trips (well under a millisecond
// on a LAN); a contended one waits for up to a holder's TTL.
var (
	waitBuckets    = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets    = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
	attemptBuckets = []float64{1, 2, 3, 4, 5, 10, 20, 50, 100, 1000}
)

// recorder holds the instruments of one Observer. It is immutable after
// Observer returns, and its instruments are safe for concurrent use.
type recorder struct {
	names  bool
	tracer trace.Tracer

	acquireDur      metric.Float64Histogram
	acquireAttempts metric.Int64Histogram
	holdDur         metric.Float64Histogram
	extends         metric.Int64Counter
	lost            metric.Int64Counter
	wakeups         metric.Int64Counter
	reloads         metric.Int64Counter
	retries         metric.Int64Counter
}

// Observer returns a locker.Observer that records every Event as the
// metrics and spans described in the package documentation, using a meter
// and a tracer named ScopeName from the providers in opts. The Observer is
// safe for concurrent use and ignores kinds of Event it does not know. The
// core calls it on the goroutine doing the lock work, and it does no I/O of
// its own; so that ending a span does none either, give the
// TracerProvider a batching span processor (sdktrace.WithBatcher), not a
// synchronous one (sdktrace.WithSyncer).
//
// Observer fails only when the MeterProvider refuses an instrument; the
// error names the instruments and the Observer is nil. Nothing is
// registered with the providers that would need undoing.
func Observer(opts *Options) (locker.Observer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otelglobal.GetMeterProvider()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otelglobal.GetTracerProvider()
	}
	m := o.MeterProvider.Meter(ScopeName)
	r := &recorder{names: o.LockNameAttribute, tracer: o.TracerProvider.Tracer(ScopeName)}

	var errs []error
	check := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	var err error
	r.acquireDur, err = m.Float64Histogram(MetricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("How long acquisitions of a lock took, from the call to the outcome."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	check(MetricAcquireDuration, err)
	r.acquireAttempts, err = m.Int64Histogram(MetricAcquireAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("How many acquire calls acquisitions of a lock made."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...))
	check(MetricAcquireAttempts, err)
	r.holdDur, err = m.Float64Histogram(MetricHoldDuration, metric.WithUnit("s"),
		metric.WithDescription("How long leases were held, from the grant to the end of Unlock."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	check(MetricHoldDuration, err)
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(name, err)
		return c
	}
	r.extends = counter(MetricExtends, "{extend}", "Extends of leases, auto-refreshes included.")
	r.lost = counter(MetricLeaseLost, "{lease}", "Leases lost: expired, or taken by another owner, before Unlock.")
	r.wakeups = counter(MetricWakeups, "{wakeup}", "Waiting acquisitions woken by a release message.")
	r.reloads = counter(MetricScriptReloads, "{reload}", "Scripts loaded again after the server answered NOSCRIPT.")
	r.retries = counter(MetricCallRetries, "{retry}", "Calls tried again after a passing error (a broken connection, TRYAGAIN, ...).")
	if len(errs) > 0 {
		return nil, fmt.Errorf("scriptlock/otel: creating instruments: %w", errors.Join(errs...))
	}
	return r.observe, nil
}

// observe is the locker.Observer.
func (r *recorder) observe(ctx context.Context, e locker.Event) {
	if ctx == nil {
		ctx = context.Background()
	}
	now := time.Now()
	switch e.Kind {
	case locker.EventAcquire:
		r.acquire(ctx, now, e)
	case locker.EventRelease:
		r.release(ctx, now, e)
	case locker.EventExtend:
		r.extend(ctx, now, e)
	case locker.EventLoss:
		r.loss(ctx, now, e)
	case locker.EventWake:
		r.wakeups.Add(ctx, 1, metric.WithAttributes(r.common(e, 0)...))
		r.spanEvent(ctx, now, SpanEventWakeup, r.common(e, 0))
	case locker.EventReload:
		attrs := r.common(e, 1)
		if e.Script != "" {
			attrs = append(attrs, AttrScriptName.String(e.Script))
		}
		r.reloads.Add(ctx, 1, metric.WithAttributes(attrs...))
		r.spanEvent(ctx, now, SpanEventReload, attrs)
	case locker.EventRetry:
		attrs := r.common(e, 2)
		if e.Script != "" {
			attrs = append(attrs, AttrScriptName.String(e.Script))
		}
		if e.Err != nil {
			attrs = append(attrs, AttrErrorType.String(errorType(e.Err)))
		}
		r.retries.Add(ctx, 1, metric.WithAttributes(attrs...))
		r.spanEvent(ctx, now, SpanEventRetry, attrs)
	}
}

// acquire records an acquisition: its wait, its attempts and a span from
// its call to now.
func (r *recorder) acquire(ctx context.Context, now time.Time, e locker.Event) {
	out := acquireOutcome(e.Err)
	attrs := r.outcomeAttrs(e, out)
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	r.acquireDur.Record(ctx, e.Wait.Seconds(), set)
	r.acquireAttempts.Record(ctx, int64(e.Attempts), set)

	attrs = append(attrs, AttrAttempts.Int(e.Attempts))
	if e.Err == nil && e.Fence != 0 {
		attrs = append(attrs, AttrFence.Int64(e.Fence))
	}
	r.span(ctx, SpanAcquire, now.Add(-e.Wait), now, attrs, e, failed(out))
}

// release records an Unlock: the hold's duration and a span from the grant
// to now.
func (r *recorder) release(ctx context.Context, now time.Time, e locker.Event) {
	out := leaseOutcome(e.Err, OutcomeReleased)
	attrs := r.outcomeAttrs(e, out)
	r.holdDur.Record(ctx, e.Held.Seconds(), metric.WithAttributes(attrs...))
	if e.Fence != 0 {
		attrs = append(attrs, AttrFence.Int64(e.Fence))
	}
	r.span(ctx, SpanHold, now.Add(-e.Held), now, attrs, e, failed(out))
}

// extend records an Extend, and an instant span when ctx holds a span.
func (r *recorder) extend(ctx context.Context, now time.Time, e locker.Event) {
	out := leaseOutcome(e.Err, OutcomeExtended)
	attrs := r.outcomeAttrs(e, out)
	r.extends.Add(ctx, 1, metric.WithAttributes(attrs...))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return // an auto-refresh, or an untraced caller: no root span
	}
	if e.Fence != 0 {
		attrs = append(attrs, AttrFence.Int64(e.Fence))
	}
	r.span(ctx, SpanExtend, now, now, attrs, e, failed(out))
}

// loss records a lost lease: the counter, and an event on the span in ctx
// or else an instant span of its own.
func (r *recorder) loss(ctx context.Context, now time.Time, e locker.Event) {
	attrs := r.common(e, 3)
	attrs = append(attrs, AttrLossCause.String(lossCause(e.Err)))
	r.lost.Add(ctx, 1, metric.WithAttributes(attrs...))
	if e.Fence != 0 {
		attrs = append(attrs, AttrFence.Int64(e.Fence))
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(SpanEventLeaseLost, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
		return
	}
	r.span(ctx, SpanLoss, now, now, attrs, e, true)
}

// span records a finished span from start to end, a child of the span in
// ctx, with status Error and the error's description when failed.
func (r *recorder) span(ctx context.Context, name string, start, end time.Time, attrs []attribute.KeyValue, e locker.Event, failed bool) {
	_, span := r.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if failed && e.Err != nil {
		span.SetStatus(codes.Error, r.describe(e))
	}
	span.End(trace.WithTimestamp(end))
}

// spanEvent adds an event to the span in ctx when it is recording.
func (r *recorder) spanEvent(ctx context.Context, now time.Time, name string, attrs []attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(name, trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	}
}

// common returns the attributes every record of e has: the mode, and the
// lock's name when opted in, with room for extra more.
func (r *recorder) common(e locker.Event, extra int) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 2+extra)
	if e.Mode != "" {
		attrs = append(attrs, AttrLockMode.String(e.Mode))
	}
	if r.names && e.Lock != "" {
		attrs = append(attrs, AttrLockName.String(e.Lock))
	}
	return attrs
}

// outcomeAttrs returns the common attributes, the outcome and, for a
// failure, error.type; with room for two more (span-only) attributes.
func (r *recorder) outcomeAttrs(e locker.Event, out string) []attribute.KeyValue {
	attrs := r.common(e, 4)
	attrs = append(attrs, AttrOutcome.String(out))
	if failed(out) && e.Err != nil {
		attrs = append(attrs, AttrErrorType.String(errorType(e.Err)))
	}
	return attrs
}

// describe is the status description of a failed e: its error's message,
// without the lock's name unless it is opted in.
func (r *recorder) describe(e locker.Event) string {
	if r.names {
		return e.Err.Error()
	}
	return redact(e.Err.Error(), e.Lock)
}
