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

// newestRuns: NewestRuns answers many probes and locations at once (the
// fleet's decider asks once a round, SPEC §13): for each, in the order
// asked, that probe's newest runs from that location alone, newest first
// (started_at, then recording order), at most its limit, each with its
// attempts; the default location by its stored name; nothing for a
// location nothing ran from; the same one asked twice answered twice;
// and each run as History returns it.
func newestRuns(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	for _, r := range []struct {
		op, probe, location string
		sec                 int
		outcome             results.Outcome
	}{
		{"p-eu-1", "p", "eu-west", 1, results.Pass},
		{"p-us-1", "p", "us-east", 1, results.Pass},
		{"p-eu-2", "p", "eu-west", 2, results.Unavailable},
		{"p-eu-3", "p", "eu-west", 4, results.Pass},
		{"p-eu-3b", "p", "eu-west", 4, results.Unavailable}, // same instant, recorded after
		{"p-us-2", "p", "us-east", 3, results.Unavailable},
		{"q-eu-1", "q", "eu-west", 5, results.Pass},
		{"p-def-1", "p", "", 6, results.Pass},
		{"p-eu-0", "p", "eu-west", 0, results.Pass}, // recorded last, started first
	} {
		code := results.Code("")
		if r.outcome == results.Unavailable {
			code = results.CodeTimeout
		}
		ran := runAt(r.op, r.probe, at(r.sec), r.outcome, code, 5, 2)
		ran.Location = r.location
		recordRun(t, s, &results.RunRecord{Result: ran})
	}
	want := []results.RunsFrom{
		{Probe: "p", Location: "eu-west", Limit: 3},
		{Probe: "p", Location: "us-east", Limit: 10},
		{Probe: "q", Location: "eu-west", Limit: 10},
		{Probe: "p", Location: "ap-south", Limit: 10},
		{Probe: "p", Location: results.DefaultLocation, Limit: 10},
		{Probe: "p", Location: "eu-west", Limit: 1},
		{Probe: "q", Location: "us-east", Limit: 10},
	}
	got, err := s.NewestRuns(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := [][]string{
		{"p-eu-3b", "p-eu-3", "p-eu-2"},
		{"p-us-2", "p-us-1"},
		{"q-eu-1"},
		{},
		{"p-def-1"},
		{"p-eu-3b"},
		{},
	}
	if len(got) != len(want) {
		t.Fatalf("NewestRuns: %d answers for %d asked", len(got), len(want))
	}
	for i := range want {
		if g := ids(got[i]); !reflect.DeepEqual(g, wantIDs[i]) {
			t.Errorf("NewestRuns %+v: %v, want %v", want[i], g, wantIDs[i])
		}
	}
	// Each run reads back whole, as History returns it.
	hist, err := s.History(ctx, results.HistoryQuery{Probes: []string{"p"}, Locations: []string{"eu-west"}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) == len(hist) {
		for i := range hist {
			if !reflect.DeepEqual(got[0][i], hist[i]) {
				t.Errorf("NewestRuns' run %s differs from History's:\n%s\nwant\n%s", hist[i].OperationID, dump(got[0][i]), dump(hist[i]))
			}
		}
	}
	if len(got[0]) > 0 && len(got[0][0].Attempts) != 2 {
		t.Errorf("NewestRuns' run %s has %d attempts, want 2", got[0][0].OperationID, len(got[0][0].Attempts))
	}
	if none, err := s.NewestRuns(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("NewestRuns(nothing) = %v, %v; want nothing", none, err)
	}
}
