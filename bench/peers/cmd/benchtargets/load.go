package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// results holds every row's samples, one per pass: rows in the order they
// first appear, each named without its -<GOMAXPROCS> suffix.
type results struct {
	rows  []*row
	byKey map[string]*row
}

// row is one benchmark leaf: its base name ("BenchmarkLock"), its levels
// ("lib=scriptlock", "driver=goredis", ...) and its samples per unit, as
// the benchmark printed them (ns/op, not benchfmt's sec/op).
type row struct {
	base    string
	levels  []string
	samples map[string][]float64
}

// name is the row's full name without the -<GOMAXPROCS> suffix.
func (r *row) name() string {
	return strings.Join(append([]string{r.base}, r.levels...), "/")
}

// level returns the value of the row's level key ("" when it has none).
func (r *row) level(key string) string {
	for _, l := range r.levels {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	return ""
}

// median returns the median of the row's samples of unit (the mean of the
// two middle ones for an even count), and false when it has none.
func (r *row) median(unit string) (float64, bool) {
	q, ok := r.quartiles(unit)
	return q[1], ok
}

// quartiles returns the first quartile, the median and the third quartile
// of the row's samples of unit (interpolating linearly between the
// samples around each), and false when it has none.
func (r *row) quartiles(unit string) ([3]float64, bool) {
	vs := slices.Clone(r.samples[unit])
	if len(vs) == 0 {
		return [3]float64{}, false
	}
	slices.Sort(vs)
	at := func(q float64) float64 {
		pos := q * float64(len(vs)-1)
		i := int(pos)
		if i+1 >= len(vs) {
			return vs[len(vs)-1]
		}
		return vs[i] + (pos-float64(i))*(vs[i+1]-vs[i])
	}
	return [3]float64{at(0.25), at(0.5), at(0.75)}, true
}

// passes returns how many samples of unit the row has.
func (r *row) passes(unit string) int { return len(r.samples[unit]) }

// newResults returns an empty set of results.
func newResults() *results { return &results{byKey: map[string]*row{}} }

// loadFile adds the results in the file at path to rs. A file that does
// not exist adds nothing and returns false (its targets print "no data");
// one that cannot be read is an error. Lines that are not results (PASS,
// log output) are skipped, as benchstat skips them.
func (rs *results) loadFile(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := rs.read(f, path); err != nil {
		return false, err
	}
	return true, nil
}

// read adds the results read from r (named file in errors) to rs.
func (rs *results) read(r io.Reader, file string) error {
	br := benchfmt.NewReader(r, file)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue // a syntax error: not a result line
		}
		b, parts := res.Name.Parts()
		base := "Benchmark" + string(b) // benchfmt drops the prefix
		var levels []string
		for _, p := range parts {
			if s, ok := strings.CutPrefix(string(p), "/"); ok {
				levels = append(levels, s)
			} // else "-<GOMAXPROCS>", dropped
		}
		key := strings.Join(append([]string{base}, levels...), "/")
		rw := rs.byKey[key]
		if rw == nil {
			rw = &row{base: base, levels: levels, samples: map[string][]float64{}}
			rs.byKey[key] = rw
			rs.rows = append(rs.rows, rw)
		}
		for _, v := range res.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, val = v.OrigUnit, v.OrigValue
			}
			rw.samples[unit] = append(rw.samples[unit], val)
		}
	}
	if err := br.Err(); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// match returns the rows of benchmark base that have every level of want
// ("key=value"), in the order they were read.
func (rs *results) match(base string, want ...string) []*row {
	var out []*row
	for _, r := range rs.rows {
		if r.base != base {
			continue
		}
		ok := true
		for _, w := range want {
			if !slices.Contains(r.levels, w) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// find returns the row of benchmark base with every level of want, the one
// with the fewest levels when several have them (the first read among
// those), or nil.
func (rs *results) find(base string, want ...string) *row {
	var best *row
	for _, r := range rs.match(base, want...) {
		if best == nil || len(r.levels) < len(best.levels) {
			best = r
		}
	}
	return best
}
