package otel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/scriptlock/scriptlock/locker"
	lockotel "github.com/scriptlock/scriptlock/otel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventCase is one synthetic Event and what the Observer must record for
// it. Every case runs on fresh providers.
type eventCase struct {
	name   string
	rule   string
	traced bool // the Event's context holds a recording span
	event  locker.Event
	// metrics: every metric with data, by name, and its one point's value
	// (seconds for durations, a count for attempts and counters).
	metrics map[string]float64
	attrs   []attribute.KeyValue // the point's attributes, exactly
	// span: the span recorded ("" for none); spanEvent: the event added to
	// the parent span ("" for none).
	span, spanEvent string
	spanAttrs       []attribute.KeyValue // among the span's (or event's) attributes
	status          codes.Code
	duration        time.Duration // the span's end minus start
}

var (
	errNoPerm   = errors.New(`locker: acquire script: NOPERM this user has no permissions to run the 'evalsha' command`)
	errExpired  = fmt.Errorf("%w: %q: validity deadline passed without a refresh", locker.ErrExpired, "job:1")
	errTaken    = fmt.Errorf("%w: %q", locker.ErrHeldByOther, "job:1")
	errRefused  = fmt.Errorf("%w: %q", locker.ErrNotObtained, "job:1")
	mode        = lockotel.AttrLockMode.String
	outcome     = lockotel.AttrOutcome.String
	errType     = lockotel.AttrErrorType.String
	cause       = lockotel.AttrLossCause.String
	script      = lockotel.AttrScriptName.String
	fence       = lockotel.AttrFence.Int64
	attemptsAtt = lockotel.AttrAttempts.Int
)

var eventCases = []eventCase{
	{
		name: "acquire/granted", rule: "a grant records its wait and attempts and a span from its call, status unset",
		traced:  true,
		event:   locker.Event{Kind: locker.EventAcquire, Lock: "job:1", Mode: "mutex", Fence: 42, Attempts: 3, Wait: 250 * time.Millisecond},
		metrics: map[string]float64{lockotel.MetricAcquireDuration: 0.25, lockotel.MetricAcquireAttempts: 3},
		attrs:   []attribute.KeyValue{mode("mutex"), outcome("granted")},
		span:    lockotel.SpanAcquire, spanAttrs: []attribute.KeyValue{fence(42), attemptsAtt(3), outcome("granted")},
		status: codes.Unset, duration: 250 * time.Millisecond,
	},
	{
		name: "acquire/not_obtained", rule: "a refused acquisition is an outcome, not an error",
		event:   locker.Event{Kind: locker.EventAcquire, Lock: "job:1", Mode: "read", Attempts: 1, Wait: time.Millisecond, Err: errRefused},
		metrics: map[string]float64{lockotel.MetricAcquireDuration: 0.001, lockotel.MetricAcquireAttempts: 1},
		attrs:   []attribute.KeyValue{mode("read"), outcome("not_obtained")},
		span:    lockotel.SpanAcquire, spanAttrs: []attribute.KeyValue{attemptsAtt(1)},
		status: codes.Unset, duration: time.Millisecond,
	},
	{
		name: "acquire/error", rule: "a failed acquisition has outcome error, error.type the Redis code, status Error",
		event:   locker.Event{Kind: locker.EventAcquire, Lock: "job:1", Mode: "write", Attempts: 1, Wait: 2 * time.Millisecond, Err: errNoPerm},
		metrics: map[string]float64{lockotel.MetricAcquireDuration: 0.002, lockotel.MetricAcquireAttempts: 1},
		attrs:   []attribute.KeyValue{mode("write"), outcome("error"), errType("NOPERM")},
		span:    lockotel.SpanAcquire,
		status:  codes.Error, duration: 2 * time.Millisecond,
	},
	{
		name: "release/released", rule: "an Unlock records the hold time and a span over the hold",
		traced:  true,
		event:   locker.Event{Kind: locker.EventRelease, Lock: "job:1", Mode: "mutex", Fence: 42, Held: 2 * time.Second},
		metrics: map[string]float64{lockotel.MetricHoldDuration: 2},
		attrs:   []attribute.KeyValue{mode("mutex"), outcome("released")},
		span:    lockotel.SpanHold, spanAttrs: []attribute.KeyValue{fence(42)},
		status: codes.Unset, duration: 2 * time.Second,
	},
	{
		name: "release/expired", rule: "an Unlock that finds the lease expired is an error",
		event:   locker.Event{Kind: locker.EventRelease, Lock: "job:1", Mode: "write", Fence: 42, Held: time.Second, Err: errExpired},
		metrics: map[string]float64{lockotel.MetricHoldDuration: 1},
		attrs:   []attribute.KeyValue{mode("write"), outcome("expired"), errType("expired")},
		span:    lockotel.SpanHold, status: codes.Error, duration: time.Second,
	},
	{
		name: "extend/traced", rule: "an Extend under a span counts and records an instant child span",
		traced:  true,
		event:   locker.Event{Kind: locker.EventExtend, Lock: "job:1", Mode: "mutex", Fence: 42},
		metrics: map[string]float64{lockotel.MetricExtends: 1},
		attrs:   []attribute.KeyValue{mode("mutex"), outcome("extended")},
		span:    lockotel.SpanExtend, spanAttrs: []attribute.KeyValue{fence(42)},
		status: codes.Unset,
	},
	{
		name: "extend/untraced", rule: "an Extend without a span (an auto-refresh) only counts",
		event:   locker.Event{Kind: locker.EventExtend, Lock: "job:1", Mode: "read", Fence: 42, Err: errTaken},
		metrics: map[string]float64{lockotel.MetricExtends: 1},
		attrs:   []attribute.KeyValue{mode("read"), outcome("held_by_other"), errType("held_by_other")},
	},
	{
		name: "loss/untraced", rule: "a loss without a span counts with its cause and records an instant span, status Error",
		event:   locker.Event{Kind: locker.EventLoss, Lock: "job:1", Mode: "mutex", Fence: 42, Err: errExpired},
		metrics: map[string]float64{lockotel.MetricLeaseLost: 1},
		attrs:   []attribute.KeyValue{mode("mutex"), cause("expired")},
		span:    lockotel.SpanLoss, spanAttrs: []attribute.KeyValue{fence(42), cause("expired")},
		status: codes.Error,
	},
	{
		name: "loss/traced", rule: "a loss under a recording span adds an event to it",
		traced:    true,
		event:     locker.Event{Kind: locker.EventLoss, Lock: "job:1", Mode: "write", Fence: 42, Err: errTaken},
		metrics:   map[string]float64{lockotel.MetricLeaseLost: 1},
		attrs:     []attribute.KeyValue{mode("write"), cause("held_by_other")},
		spanEvent: lockotel.SpanEventLeaseLost, spanAttrs: []attribute.KeyValue{fence(42), cause("held_by_other")},
	},
	{
		name: "loss/other", rule: "a loss with an unknown cause counts as other",
		event:   locker.Event{Kind: locker.EventLoss, Lock: "job:1", Mode: "mutex", Err: errors.New("gone")},
		metrics: map[string]float64{lockotel.MetricLeaseLost: 1},
		attrs:   []attribute.KeyValue{mode("mutex"), cause("other")},
		span:    lockotel.SpanLoss, status: codes.Error,
	},
	{
		name: "wake", rule: "a wake-up counts and adds an event to the span in its context",
		traced:    true,
		event:     locker.Event{Kind: locker.EventWake, Lock: "job:1"},
		metrics:   map[string]float64{lockotel.MetricWakeups: 1},
		attrs:     []attribute.KeyValue{},
		spanEvent: lockotel.SpanEventWakeup,
	},
	{
		name: "reload", rule: "a script reload counts by script",
		traced:    true,
		event:     locker.Event{Kind: locker.EventReload, Script: "acquire"},
		metrics:   map[string]float64{lockotel.MetricScriptReloads: 1},
		attrs:     []attribute.KeyValue{script("acquire")},
		spanEvent: lockotel.SpanEventReload, spanAttrs: []attribute.KeyValue{script("acquire")},
	},
	{
		name: "retry/script", rule: "a retried lease call counts by script and error.type",
		event:   locker.Event{Kind: locker.EventRetry, Script: "release", Err: fmt.Errorf("locker: release script: %w", io.EOF)},
		metrics: map[string]float64{lockotel.MetricCallRetries: 1},
		attrs:   []attribute.KeyValue{script("release"), errType("network")},
	},
	{
		name: "retry/wait", rule: "a retried acquire attempt counts with the Redis code",
		traced:    true,
		event:     locker.Event{Kind: locker.EventRetry, Lock: "job:1", Err: errors.New("locker: acquire script: TRYAGAIN Multiple keys request during rehashing of slot")},
		metrics:   map[string]float64{lockotel.MetricCallRetries: 1},
		attrs:     []attribute.KeyValue{errType("TRYAGAIN")},
		spanEvent: lockotel.SpanEventRetry, spanAttrs: []attribute.KeyValue{errType("TRYAGAIN")},
	},
	{
		name: "unknown", rule: "a kind of Event the adapter does not know is ignored",
		traced: true,
		event:  locker.Event{Kind: locker.EventKind(99), Lock: "job:1"},
	},
}

// TestObserverEvents calls the Observer with one synthetic Event of every
// kind and outcome, without Redis, and checks every metric, span and span
// event it records.
func TestObserverEvents(t *testing.T) {
	for _, c := range eventCases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("rule: %s; event: %+v", c.rule, c.event)
			h := newHarness(t, false)
			ctx := context.Background()
			var endParent func()
			if c.traced {
				pctx, parent := h.parent(ctx)
				ctx, endParent = pctx, func() { parent.End() }
			}
			h.obs(ctx, c.event)
			if endParent != nil {
				endParent()
			}

			// Metrics: exactly the expected ones, one point each.
			ms := h.collect(t)
			var got []string
			for name := range ms {
				got = append(got, name)
			}
			var want []string
			for name := range c.metrics {
				want = append(want, name)
			}
			require.ElementsMatch(t, want, got, "metrics recorded")
			for name, v := range c.metrics {
				ps := points(t, ms, name)
				require.Len(t, ps, 1, "%s: points", name)
				assert.ElementsMatch(t, c.attrs, ps[0].attrs.ToSlice(), "%s: attributes", name)
				assert.InDelta(t, v, ps[0].sum, 1e-9, "%s: value", name)
				if ps[0].count != 0 {
					assert.Equal(t, uint64(1), ps[0].count, "%s: count", name)
				}
			}

			// Spans: the expected one, if any, besides the parent.
			var own []string
			for _, s := range h.spans.Ended() {
				if s.Name() == "request" {
					continue
				}
				own = append(own, s.Name())
			}
			if c.span == "" {
				assert.Empty(t, own, "spans recorded")
			} else {
				require.Equal(t, []string{c.span}, own, "spans recorded")
				s := h.ended(c.span)[0]
				assert.Equal(t, c.status, s.Status().Code, "status")
				assert.Equal(t, c.duration, s.EndTime().Sub(s.StartTime()), "span duration")
				for _, kv := range c.spanAttrs {
					v, ok := spanAttr(s, kv.Key)
					assert.True(t, ok && v == kv.Value, "span attribute %s: got %v, want %v", kv.Key, v.String(), kv.Value.String())
				}
				for _, kv := range c.attrs {
					v, ok := spanAttr(s, kv.Key)
					assert.True(t, ok && v == kv.Value, "span attribute %s: got %v, want %v", kv.Key, v.String(), kv.Value.String())
				}
				if c.traced {
					p := h.ended("request")[0]
					assert.Equal(t, p.SpanContext().SpanID(), s.Parent().SpanID(), "parent")
					assert.Equal(t, p.SpanContext().TraceID(), s.SpanContext().TraceID(), "trace")
				} else {
					assert.False(t, s.Parent().IsValid(), "a root span")
				}
				if c.status == codes.Error {
					assert.NotContains(t, s.Status().Description, `"job:1"`, "status description without the lock's name")
					assert.NotEmpty(t, s.Status().Description, "status description")
				}
			}

			// Span events on the parent.
			if c.traced {
				p := h.ended("request")[0]
				var names []string
				for _, ev := range p.Events() {
					names = append(names, ev.Name)
				}
				if c.spanEvent == "" {
					assert.Empty(t, names, "events on the parent span")
				} else {
					require.Equal(t, []string{c.spanEvent}, names, "events on the parent span")
					ev := p.Events()[0]
					for _, kv := range c.spanAttrs {
						assert.True(t, slices.Contains(ev.Attributes, kv), "event attribute %s=%v in %v", kv.Key, kv.Value.String(), ev.Attributes)
					}
				}
			}

			// No lock name anywhere without the option.
			for _, name := range want {
				for _, p := range points(t, ms, name) {
					assert.False(t, p.attrs.HasValue(lockotel.AttrLockName), "%s: lock name attribute", name)
				}
			}
			for _, s := range h.spans.Ended() {
				_, ok := spanAttr(s, lockotel.AttrLockName)
				assert.False(t, ok, "%s: lock name attribute", s.Name())
			}
		})
	}
}

// TestObserverLockName checks that Options.LockNameAttribute puts the name
// on metrics and spans, and keeps it in status descriptions.
func TestObserverLockName(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	h.obs(ctx, locker.Event{Kind: locker.EventAcquire, Lock: "job:1", Mode: "mutex", Attempts: 1, Wait: time.Millisecond, Err: errNoPerm})
	h.obs(ctx, locker.Event{Kind: locker.EventLoss, Lock: "job:1", Mode: "mutex", Err: errExpired})
	h.obs(ctx, locker.Event{Kind: locker.EventWake, Lock: "job:1"})
	h.obs(ctx, locker.Event{Kind: locker.EventReload, Script: "acquire"}) // no lock: no name

	ms := h.collect(t)
	name := lockotel.AttrLockName.String("job:1")
	for _, m := range []string{lockotel.MetricAcquireDuration, lockotel.MetricAcquireAttempts, lockotel.MetricLeaseLost, lockotel.MetricWakeups} {
		assert.Len(t, match(points(t, ms, m), name), 1, "%s: a point with %s", m, name.Key)
	}
	for _, p := range points(t, ms, lockotel.MetricScriptReloads) {
		assert.False(t, p.attrs.HasValue(lockotel.AttrLockName), "reload without a lock: no name")
	}
	for _, s := range h.spans.Ended() {
		v, ok := spanAttr(s, lockotel.AttrLockName)
		assert.True(t, ok && v.AsString() == "job:1", "%s: lock name attribute", s.Name())
	}
	loss := h.ended(lockotel.SpanLoss)
	require.Len(t, loss, 1)
	assert.Equal(t, errExpired.Error(), loss[0].Status().Description, "status description, name kept")
}

// TestObserverRedacts checks that without LockNameAttribute the quoted
// name is cut out of status descriptions, and the rest is kept.
func TestObserverRedacts(t *testing.T) {
	h := newHarness(t, false)
	h.obs(context.Background(), locker.Event{Kind: locker.EventLoss, Lock: "job:1", Mode: "mutex", Err: errExpired})
	loss := h.ended(lockotel.SpanLoss)
	require.Len(t, loss, 1)
	d := loss[0].Status().Description
	assert.Equal(t, strings.ReplaceAll(errExpired.Error(), `"job:1"`, `"<lock>"`), d)
}

// refusingMeter refuses every histogram.
type refusingMeter struct{ noop.Meter }

func (refusingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return nil, errors.New("refused")
}

type refusingProvider struct{ noop.MeterProvider }

func (refusingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return refusingMeter{} }

// TestObserverFails checks that an instrument the MeterProvider refuses
// fails Observer with an error naming it, and no Observer.
func TestObserverFails(t *testing.T) {
	obs, err := lockotel.Observer(&lockotel.Options{MeterProvider: refusingProvider{}, TracerProvider: tracenoop.NewTracerProvider()})
	require.Error(t, err)
	assert.Nil(t, obs)
	assert.ErrorContains(t, err, lockotel.MetricAcquireDuration)
	assert.ErrorContains(t, err, lockotel.MetricHoldDuration)
	assert.ErrorContains(t, err, "refused")
}

// TestObserverDefaults checks that nil Options work (the global providers,
// no-op until set) and that the Observer then records without failing.
func TestObserverDefaults(t *testing.T) {
	obs, err := lockotel.Observer(nil)
	require.NoError(t, err)
	require.NotNil(t, obs)
	for _, c := range eventCases {
		obs(context.Background(), c.event)
	}
}
