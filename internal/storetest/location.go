package storetest

import (
	"context"
	"reflect"
	"testing"

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
