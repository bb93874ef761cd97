package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// recordLocation: the location a run ran from (results.location, SPEC
// §13) reads back from every read of results; "" is kept as the default
// location and read back as "", and History filters by location, the
// default one included.
func recordLocation(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	for _, r := range []struct{ op, probe, location string }{
		{"op-eu-1", "p", "eu-west"},
		{"op-us-1", "p", "us-east"},
		{"op-eu-2", "p", "eu-west"},
		{"op-single", "p", ""},
		{"op-q-eu", "q", "eu-west"},
	} {
		ran := runAt(r.op, r.probe, t0, results.Pass, "", 1, 1)
		ran.Location = r.location
		recordRun(t, s, &results.RunRecord{Result: ran})
	}
	if got, err := s.Result(ctx, "op-us-1"); err != nil || got.Location != "us-east" {
		t.Errorf("Result(op-us-1): location %q, %v; want us-east", got.Location, err)
	}
	if got, err := s.Result(ctx, "op-single"); err != nil || got.Location != "" || got.RanFrom() != results.DefaultLocation {
		t.Errorf("Result(op-single): location %q (ran from %q), %v; want \"\" (default)", got.Location, got.RanFrom(), err)
	}
	ops := func(rs []results.Result) map[string]string {
		out := map[string]string{}
		for _, r := range rs {
			out[r.OperationID] = r.Location
		}
		return out
	}
	for _, tt := range []struct {
		name string
		q    results.HistoryQuery
		want map[string]string
	}{
		{"no filter", results.HistoryQuery{}, map[string]string{
			"op-eu-1": "eu-west", "op-us-1": "us-east", "op-eu-2": "eu-west", "op-single": "", "op-q-eu": "eu-west"}},
		{"one location", results.HistoryQuery{Locations: []string{"eu-west"}}, map[string]string{
			"op-eu-1": "eu-west", "op-eu-2": "eu-west", "op-q-eu": "eu-west"}},
		{"one probe, one location", results.HistoryQuery{Probes: []string{"p"}, Locations: []string{"eu-west"}}, map[string]string{
			"op-eu-1": "eu-west", "op-eu-2": "eu-west"}},
		{"two locations", results.HistoryQuery{Probes: []string{"p"}, Locations: []string{"us-east", results.DefaultLocation}}, map[string]string{
			"op-us-1": "us-east", "op-single": ""}},
		{"a location nothing ran from", results.HistoryQuery{Locations: []string{"ap-south"}}, map[string]string{}},
	} {
		got, err := s.History(ctx, tt.q)
		if err != nil || !reflect.DeepEqual(ops(got), tt.want) {
			t.Errorf("History %s: %v, %v; want %v", tt.name, ops(got), err, tt.want)
		}
	}
	latest, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range latest {
		if r.Probe == "q" && r.Location != "eu-west" {
			t.Errorf("Latest: q ran from %q, want eu-west", r.Location)
		}
	}
}

// statsLocations: Stats of some locations (SPEC §13) sums up the runs
// from those locations alone, in the hours it reads from the rollups as
// in the cut hours it reads run by run, and takes the last run and the
// streak from them too; without locations it sums every location's runs.
// Each answer is held to a second store that recorded only the runs it
// should count, over windows that cut hours both ways, before and after
// retention deleted the oldest runs.
func statsLocations(t *testing.T, impl Impl) {
	ctx := context.Background()
	all := impl.Open(t)
	only := map[string]Store{"eu-west": impl.Open(t), "us-east": impl.Open(t), "": impl.Open(t)}
	h := func(hours float64) time.Time { return t0.Add(time.Duration(hours * float64(time.Hour))) }
	outcome := func(location string, i int) (results.Outcome, results.Code) {
		switch {
		case location == "eu-west" && i >= 14: // eu-west fails at the end
			return results.ContractError, results.CodeInvalidJSON
		case location == "us-east" && i%5 == 0:
			return results.Unavailable, results.CodeTimeout
		}
		return results.Pass, ""
	}
	n := 0
	for i := range 18 {
		for k, location := range []string{"eu-west", "us-east", ""} {
			n++
			o, code := outcome(location, i)
			// 20 minutes apart from h(-6) on, each location at its own
			// minute and with its own durations.
			r := runAt(fmt.Sprint("loc", n), "p", h(-6+float64(i)/3).Add(time.Duration(k)*time.Minute), o, code, 10*(k+1)+i*(k+2), 1+i%3)
			r.Location = location
			recordRun(t, all, &results.RunRecord{Result: r})
			recordRun(t, only[location], &results.RunRecord{Result: r})
		}
	}
	// A second probe that runs from us-east only.
	r := runAt("loc-q", "q", h(-2), results.Pass, "", 5, 1)
	r.Location = "us-east"
	recordRun(t, all, &results.RunRecord{Result: r})
	recordRun(t, only["us-east"], &results.RunRecord{Result: r})

	stats := func(s Store, since, until time.Time, locations ...string) []results.ProbeStats {
		t.Helper()
		got, err := s.Stats(ctx, since, until, locations...)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	windows := [][2]time.Time{
		{},
		{h(-5).Add(10 * time.Minute), h(-1).Add(50 * time.Minute)},
		{h(-5).Add(40 * time.Minute), h(-1).Add(10 * time.Minute)},
		{h(-4).Add(-time.Minute), time.Time{}},
		{h(-3).Add(5 * time.Minute), h(-3).Add(55 * time.Minute)},
	}
	check := func(when string) {
		t.Helper()
		for _, w := range windows {
			for location, s := range only {
				want := stats(s, w[0], w[1])
				name := location
				if name == "" {
					name = results.DefaultLocation
				}
				if got := stats(all, w[0], w[1], name); !reflect.DeepEqual(got, want) {
					t.Errorf("%s, [%v, %v) of %s:\n got  %+v\n want %+v", when, w[0], w[1], name, got, want)
				}
			}
			want := stats(all, w[0], w[1])
			if got := stats(all, w[0], w[1], "us-east", "eu-west", results.DefaultLocation); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, [%v, %v) of every location named:\n got  %+v\n want %+v (none named)", when, w[0], w[1], got, want)
			}
			if got := stats(all, w[0], w[1], "ap-south"); len(got) != 0 {
				t.Errorf("%s, [%v, %v) of a location nothing ran from: %+v", when, w[0], w[1], got)
			}
		}
	}
	check("recorded")
	if got := stats(all, time.Time{}, time.Time{}, "eu-west"); len(got) != 1 || got[0].Runs != 18 ||
		got[0].LastOutcome != results.ContractError || !got[0].OutcomeSince.Equal(h(-6+14.0/3)) {
		t.Errorf("eu-west: %+v; want p alone, 18 runs, failing since its 15th", got)
	}
	if got := stats(all, time.Time{}, time.Time{}); len(got) != 2 || got[0].Runs != 54 || got[1].Runs != 1 {
		t.Errorf("every location: %+v; want p with 54 runs and q with 1", got)
	}

	cutoff := h(-4).Add(30 * time.Minute)
	for _, s := range []Store{all, only["eu-west"], only["us-east"], only[""]} {
		if _, err := s.Prune(ctx, cutoff, 2); err != nil {
			t.Fatal(err)
		}
	}
	check("pruned")
}
