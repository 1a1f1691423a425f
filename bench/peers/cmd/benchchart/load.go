package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// table holds every figure's samples: row ("lib/driver") -> scenario
// ("op=…/clients=…") -> unit as the benchmark printed it -> samples.
type table struct {
	rows    []string
	samples map[string]map[string]map[string][]float64
}

// load reads benchmark results from files. Syntax errors are reported on
// stderr and skipped; a file that cannot be read, or no result at all, is
// an error.
func load(files []string) (*table, error) {
	t := &table{samples: map[string]map[string]map[string][]float64{}}
	r := benchfmt.Files{Paths: files, AllowStdin: false}
	n := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			fmt.Fprintln(os.Stderr, "benchchart: skipping:", rec)
		case *benchfmt.Result:
			row, scenario := split(rec.Name.String())
			if row == "" {
				continue
			}
			if t.samples[row] == nil {
				t.samples[row] = map[string]map[string][]float64{}
				t.rows = append(t.rows, row)
			}
			units := t.samples[row][scenario]
			if units == nil {
				units = map[string][]float64{}
				t.samples[row][scenario] = units
			}
			for _, v := range rec.Values {
				unit, val := v.Unit, v.Value
				if v.OrigUnit != "" {
					unit, val = v.OrigUnit, v.OrigValue
				}
				units[unit] = append(units[unit], val)
			}
			n++
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no benchmark results in %s", strings.Join(files, " "))
	}
	slices.SortStableFunc(t.rows, func(a, b string) int { return rank(a) - rank(b) })
	return t, nil
}

// split turns "BenchmarkLock/lib=x/driver=y/op=z/clients=1-2" into the row
// "x/y" (or "x" without a driver) and the scenario "op=z/clients=1". It
// returns an empty row for a name without a lib key.
func split(name string) (row, scenario string) {
	bn := benchfmt.Name(name)
	_, parts := bn.Parts()
	var lib, driver string
	var rest []string
	for _, p := range parts {
		s := string(p)
		if !strings.HasPrefix(s, "/") {
			continue // "-<GOMAXPROCS>"
		}
		s = s[1:]
		switch {
		case strings.HasPrefix(s, "lib="):
			lib = strings.TrimPrefix(s, "lib=")
		case strings.HasPrefix(s, "driver="):
			driver = strings.TrimPrefix(s, "driver=")
		default:
			rest = append(rest, s)
		}
	}
	if lib == "" {
		return "", ""
	}
	row = lib
	if driver != "" {
		row += "/" + driver
	}
	return row, strings.Join(rest, "/")
}

// rank orders rows: scriptlock, raw, syncmutex, then the peers in name
// order (kept stable by the caller's stable sort).
func rank(row string) int {
	lib, _, _ := strings.Cut(row, "/")
	switch lib {
	case "scriptlock":
		return 0
	case "raw":
		return 1
	case "syncmutex":
		return 2
	}
	return 3
}

// spread is one figure over the passes: its median and quartiles (of the
// samples as drawn) and how many passes it has.
type spread struct {
	q1, median, q3 float64
	n              int
}

// spread returns row's samples of unit in scenario, each mapped by f (a
// figure drawn otherwise than printed), as a median and quartiles.
func (t *table) spread(row, scenario, unit string, f func(float64) float64) (spread, bool) {
	raw := t.samples[row][scenario][unit]
	if len(raw) == 0 {
		return spread{}, false
	}
	vs := make([]float64, len(raw))
	for i, v := range raw {
		vs[i] = f(v)
	}
	slices.Sort(vs)
	return spread{q1: quantile(vs, 0.25), median: quantile(vs, 0.5), q3: quantile(vs, 0.75), n: len(vs)}, true
}

// quantile returns the q-quantile of the sorted vs, interpolating
// linearly between the samples around it (the median of an even count is
// the mean of the middle two).
func quantile(vs []float64, q float64) float64 {
	pos := q * float64(len(vs)-1)
	i := int(pos)
	if i+1 >= len(vs) {
		return vs[len(vs)-1]
	}
	return vs[i] + (pos-float64(i))*(vs[i+1]-vs[i])
}
