package otel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/scriptlock/scriptlock/locker"
	lockotel "github.com/scriptlock/scriptlock/otel"
	"github.com/stretchr/testify/require"
)

// harness is an Observer wired to in-memory OpenTelemetry providers.
type harness struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	obs    locker.Observer
}

// newHarness builds an Observer on a ManualReader and a SpanRecorder;
// names sets Options.LockNameAttribute.
func newHarness(t testing.TB, names bool) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = h.tp.Shutdown(context.Background())
	})
	obs, err := lockotel.Observer(&lockotel.Options{MeterProvider: mp, TracerProvider: h.tp, LockNameAttribute: names})
	require.NoError(t, err, "Observer")
	require.NotNil(t, obs)
	h.obs = obs
	return h
}

// parent starts a span to be the parent of the operations run under the
// returned context.
func (h *harness) parent(ctx context.Context) (context.Context, trace.Span) {
	return h.tp.Tracer("test").Start(ctx, "request")
}

// collect returns every metric recorded so far, by name.
func (h *harness) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm), "Collect")
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, lockotel.ScopeName, sm.Scope.Name, "instrumentation scope")
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// point is one data point of any metric kind, flattened.
type point struct {
	attrs attribute.Set
	count uint64  // histograms: the number of values; sums: 0
	sum   float64 // histograms: their sum; sums: the value
	max   float64 // histograms: the largest value
	min   float64 // histograms: the smallest value
}

// points returns the data points of the metric called name (none when it
// was not recorded).
func points(t *testing.T, ms map[string]metricdata.Metrics, name string) []point {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	var out []point
	switch d := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			mx, _ := p.Max.Value()
			mn, _ := p.Min.Value()
			out = append(out, point{attrs: p.Attributes, count: p.Count, sum: p.Sum, max: mx, min: mn})
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			mx, _ := p.Max.Value()
			mn, _ := p.Min.Value()
			out = append(out, point{attrs: p.Attributes, count: p.Count, sum: float64(p.Sum), max: float64(mx), min: float64(mn)})
		}
	case metricdata.Sum[int64]:
		require.True(t, d.IsMonotonic, "%s: a counter", name)
		for _, p := range d.DataPoints {
			out = append(out, point{attrs: p.Attributes, sum: float64(p.Value)})
		}
	default:
		t.Fatalf("%s: unexpected data %T", name, m.Data)
	}
	return out
}

// match returns the points whose attributes include every one of want.
func match(ps []point, want ...attribute.KeyValue) []point {
	var out []point
	for _, p := range ps {
		ok := true
		for _, kv := range want {
			if v, has := p.attrs.Value(kv.Key); !has || v != kv.Value {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// ended returns the ended spans called name.
func (h *harness) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// spanAttr returns the value of the span attribute k.
func spanAttr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}
