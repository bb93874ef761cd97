package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

func historyFilters(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	const es, weather, news = "external_search", "weather", "news"
	record(t, s,
		runAt("h1", es, minute(0), results.Pass, "", 221, 2),
		runAt("h2", es, minute(1), results.ContractError, "unsupported_results_container", 41, 1),
		runAt("h3", weather, minute(2), results.Unavailable, results.CodeTimeout, 15600, 3),
		runAt("h4", weather, minute(3), results.Pass, "", 80, 1),
		runAt("h5", es, minute(4), results.ContractError, results.CodeInvalidJSON, 40, 1),
		runAt("h6", news, minute(5), results.Unavailable, results.CodeServerError, 900, 2),
		// Started in the same millisecond as h6 and recorded after it.
		runAt("h7", news, minute(5), results.Pass, "", 70, 1),
		runAt("h8", es, minute(6), results.Pass, "", 60, 1),
	)
	h9 := mcpRun("h9")
	h9.StartedAt = minute(7)
	record(t, s, h9)
	type q = results.HistoryQuery
	tests := []struct {
		name string
		q    q
		want []string
	}{
		{"everything, newest first", q{}, []string{"h9", "h8", "h7", "h6", "h5", "h4", "h3", "h2", "h1"}},
		{"mcp probes", q{Kinds: []results.ProbeKind{results.ProbeMCP}}, []string{"h9"}},
		{"http probes", q{Kinds: []results.ProbeKind{results.ProbeHTTP}, Since: minute(5)}, []string{"h8", "h7", "h6"}},
		{"both kinds", q{Kinds: results.ProbeKinds, Limit: 2}, []string{"h9", "h8"}},
		{"one probe", q{Probes: []string{es}}, []string{"h8", "h5", "h2", "h1"}},
		{"two probes", q{Probes: []string{news, es}}, []string{"h8", "h7", "h6", "h5", "h2", "h1"}},
		{"unknown probe", q{Probes: []string{"nope"}}, []string{}},
		{"since (inclusive)", q{Since: minute(4)}, []string{"h9", "h8", "h7", "h6", "h5"}},
		{"until (exclusive)", q{Until: minute(4)}, []string{"h4", "h3", "h2", "h1"}},
		{"since and until", q{Since: minute(2), Until: minute(5)}, []string{"h5", "h4", "h3"}},
		{"until before since", q{Since: minute(5), Until: minute(2)}, []string{}},
		{"one outcome", q{Outcomes: []results.Outcome{results.ContractError}}, []string{"h9", "h5", "h2"}},
		{"two outcomes", q{Outcomes: []results.Outcome{results.Unavailable, results.ContractError}},
			[]string{"h9", "h6", "h5", "h3", "h2"}},
		{"pass", q{Outcomes: []results.Outcome{results.Pass}}, []string{"h8", "h7", "h4", "h1"}},
		{"one code", q{Codes: []results.Code{results.CodeTimeout}}, []string{"h3"}},
		{"two codes", q{Codes: []results.Code{results.CodeInvalidJSON, results.CodeServerError}},
			[]string{"h6", "h5"}},
		{"limit", q{Limit: 3}, []string{"h9", "h8", "h7"}},
		{"probe, outcome and since", q{Probes: []string{es},
			Outcomes: []results.Outcome{results.ContractError}, Since: minute(2)}, []string{"h5"}},
		{"probe, code and until at the run", q{Probes: []string{weather},
			Codes: []results.Code{results.CodeTimeout}, Until: minute(2)}, []string{}},
		{"every filter", q{Probes: []string{es, news}, Since: minute(1), Until: minute(6),
			Outcomes: []results.Outcome{results.ContractError, results.Unavailable},
			Codes:    []results.Code{"unsupported_results_container", results.CodeServerError}, Limit: 1},
			[]string{"h6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := s.History(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(rs); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// historyWindow: a run at exactly Since is in, a run at exactly Until is
// out, also when the bound lies between two milliseconds (what is stored)
// or is given in another time zone.
func historyWindow(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	record(t, s,
		runAt("b0", "p", ms(0), results.Pass, "", 1, 1),
		runAt("b1", "p", ms(1), results.Pass, "", 1, 1),
		runAt("b2", "p", ms(2), results.Pass, "", 1, 1),
		runAt("b3", "p", ms(3), results.Pass, "", 1, 1),
	)
	half := 500 * time.Microsecond
	elsewhere := time.FixedZone("UTC+2", 2*60*60)
	tests := []struct {
		name         string
		since, until time.Time
		want         []string
	}{
		{"at runs", ms(1), ms(3), []string{"b2", "b1"}},
		{"one millisecond", ms(2), ms(3), []string{"b2"}},
		{"empty", ms(2), ms(2), []string{}},
		{"between milliseconds", ms(0).Add(half), ms(2).Add(half), []string{"b2", "b1"}},
		{"just after a run", ms(1).Add(time.Nanosecond), ms(3).Add(time.Nanosecond), []string{"b3", "b2"}},
		{"another zone", ms(1).In(elsewhere), ms(3).In(elsewhere), []string{"b2", "b1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := s.History(ctx, results.HistoryQuery{Since: tt.since, Until: tt.until})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(rs); !slices.Equal(got, tt.want) {
				t.Errorf("[%s, %s): got %v, want %v", tt.since.Format(time.RFC3339Nano), tt.until.Format(time.RFC3339Nano), got, tt.want)
			}
		})
	}
}

// historyDefaultLimit records runs out of order and checks that History
// returns the newest results.DefaultLimit, newest first, with the
// recording order breaking ties of started_at.
func historyDefaultLimit(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	var want []string
	for i := range 60 {
		// Recorded 59, 58, ... 0: recording order is not time order.
		n := 59 - i
		at := t0.Add(time.Duration(n/2) * time.Second) // pairs share a start
		record(t, s, runAt(fmt.Sprint("o", n), "p", at, results.Pass, "", 1, 1))
	}
	// Newest first: higher n first; within a pair (2k, 2k+1) the one
	// recorded later, 2k, comes first.
	for k := 29; k >= 0 && len(want) < results.DefaultLimit; k-- {
		want = append(want, fmt.Sprint("o", 2*k), fmt.Sprint("o", 2*k+1))
	}
	for _, limit := range []int{0, -1} {
		rs, err := s.History(ctx, results.HistoryQuery{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(rs); !slices.Equal(got, want) {
			t.Errorf("limit %d: got %v, want %v", limit, got, want)
		}
	}
	rs, err := s.History(ctx, results.HistoryQuery{Limit: 1000})
	if err != nil || len(rs) != 60 {
		t.Errorf("limit 1000: got %d results, %v, want 60", len(rs), err)
	}
}

// historyAttempts checks that every result of a page comes back as Result
// returns it, attempts included, over a page of hundreds of results.
func historyAttempts(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	const n = 620
	outcomes := []results.Outcome{results.Pass, results.ContractError, results.Unavailable}
	codes := []results.Code{"", results.CodeInvalidJSON, results.CodeTimeout}
	for i := range n {
		k := i % 3
		record(t, s, runAt(fmt.Sprint("a", i), fmt.Sprint("p", i%4), t0.Add(time.Duration(i)*time.Second),
			outcomes[k], codes[k], 10+i, 1+i%3))
	}
	// A run without attempts (stopped before its first) has none.
	none := runAt("a-none", "p0", t0.Add(-time.Hour), results.Unavailable, results.CodeCanceled, 0, 0)
	record(t, s, none)

	rs, err := s.History(ctx, results.HistoryQuery{Limit: n + 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != n+1 {
		t.Fatalf("got %d results, want %d", len(rs), n+1)
	}
	for i, got := range rs {
		want, err := s.Result(ctx, got.OperationID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("result %d (%s):\n got  %s\n want %s", i, got.OperationID, dump(got), dump(want))
		}
		if wantN := 1 + (n-1-i)%3; i < n && got.AttemptCount() != wantN {
			t.Fatalf("result %d (%s): %d attempts, want %d", i, got.OperationID, got.AttemptCount(), wantN)
		}
	}
	if last := rs[n]; last.OperationID != "a-none" || last.Attempts != nil {
		t.Errorf("run without attempts: got %s with %v", last.OperationID, last.Attempts)
	}
}

func historyUnknownOutcome(t *testing.T, impl Impl) {
	s := impl.Open(t)
	_, err := s.History(context.Background(), results.HistoryQuery{Outcomes: []results.Outcome{"failed"}})
	if err == nil || !strings.Contains(err.Error(), `unknown outcome "failed"`) {
		t.Errorf("got %v, want an unknown outcome error", err)
	}
	_, err = s.History(context.Background(), results.HistoryQuery{Kinds: []results.ProbeKind{"grpc"}})
	if err == nil || !strings.Contains(err.Error(), `unknown probe kind "grpc"`) {
		t.Errorf("got %v, want an unknown probe kind error", err)
	}
}

func latest(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if rs, err := s.Latest(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("empty store: got %v, %v", ids(rs), err)
	}
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	record(t, s,
		runAt("w-old", "weather", minute(0), results.Pass, "", 10, 1),
		runAt("w-new", "weather", minute(9), results.Unavailable, results.CodeTimeout, 5000, 3),
		// Recorded late but started earlier: not the latest.
		runAt("es-late", "external_search", minute(1), results.Pass, "", 10, 2),
		runAt("es-2", "external_search", minute(2), results.ContractError, results.CodeInvalidJSON, 10, 1),
		// Same start: the one recorded last wins.
		runAt("es-3a", "external_search", minute(3), results.Pass, "", 10, 1),
		runAt("es-3b", "external_search", minute(3), results.Pass, "", 10, 2),
		runAt("a-only", "a_probe", minute(-100), results.Pass, "", 10, 1),
	)
	record(t, s, runAt("es-0", "external_search", minute(0), results.Pass, "", 10, 1))
	rs, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(rs), []string{"a-only", "es-3b", "w-new"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, got := range rs {
		want, err := s.Result(ctx, got.OperationID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %s\n want %s", got.OperationID, dump(got), dump(want))
		}
	}
}

func drifts(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if ds, err := s.Drifts(ctx, "", time.Time{}, 0); err != nil || len(ds) != 0 {
		t.Fatalf("empty store: got %v, %v", ds, err)
	}
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	drift := func(id, probe string, at time.Time, diff ...string) {
		r := runAt(id, probe, at, results.ContractError, "unsupported_results_container", 10, 1)
		recordRun(t, s, &results.RunRecord{Result: r, Drift: &results.Drift{Kind: results.DriftResponse, Probe: probe, OperationID: id,
			DetectedAt: at, Baseline: fpList, Current: fpMap, Diff: diff}})
	}
	drift("d1", "external_search", minute(0), driftDiff...)
	drift("d2", "weather", minute(1), "temp: number -> string")
	drift("d3", "external_search", minute(2)) // no diff lines
	drift("d4", "external_search", minute(2), "a: added (null)")
	drift("d5", "weather", minute(3), "temp: string -> number")
	record(t, s, runAt("no-drift", "external_search", minute(4), results.Pass, "", 1, 1))

	opIDs := func(ds []results.Drift) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, d.OperationID)
		}
		return out
	}
	tests := []struct {
		name  string
		probe string
		since time.Time
		limit int
		want  []string
	}{
		{"all", "", time.Time{}, 0, []string{"d5", "d4", "d3", "d2", "d1"}},
		{"one probe", "external_search", time.Time{}, 0, []string{"d4", "d3", "d1"}},
		{"since (inclusive)", "", minute(2), 0, []string{"d5", "d4", "d3"}},
		{"probe and since", "weather", minute(2), 0, []string{"d5"}},
		{"limit", "", time.Time{}, 2, []string{"d5", "d4"}},
		{"unknown probe", "nope", time.Time{}, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := s.Drifts(ctx, tt.probe, tt.since, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := opIDs(ds); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	ds, err := s.Drifts(ctx, "external_search", time.Time{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []results.Drift{
		{Kind: results.DriftResponse, Probe: "external_search", OperationID: "d4", DetectedAt: minute(2), Baseline: fpList, Current: fpMap, Diff: []string{"a: added (null)"}},
		{Kind: results.DriftResponse, Probe: "external_search", OperationID: "d3", DetectedAt: minute(2), Baseline: fpList, Current: fpMap},
		{Kind: results.DriftResponse, Probe: "external_search", OperationID: "d1", DetectedAt: minute(0), Baseline: fpList, Current: fpMap, Diff: driftDiff},
	}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("drifts of external_search:\n got  %+v\n want %+v", ds, want)
	}
}

func recentRuns(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	const es, weather = "external_search", "weather"
	record(t, s,
		runAt("r1", es, minute(0), results.Pass, "", 221, 2),
		runAt("r2", es, minute(1), results.ContractError, "unsupported_results_container", 41, 1),
		runAt("r3", weather, minute(2), results.Unavailable, results.CodeTimeout, 15600, 3),
		runAt("r4", es, minute(3), results.Pass, "", 80, 1),
		// Same millisecond as r4, recorded after it: it counts as later.
		runAt("r5", es, minute(3), results.Unavailable, results.CodeServerError, 900, 2),
	)
	type runs = map[string][]results.RecentRun
	run := func(m int, outcome results.Outcome, ms, attempts int) results.RecentRun {
		return results.RecentRun{StartedAt: minute(m), Outcome: outcome, Duration: time.Duration(ms) * time.Millisecond, Attempts: attempts}
	}
	tests := []struct {
		name   string
		probes []string
		n      int
		want   runs
	}{
		{"last n, oldest first", []string{es}, 3, runs{es: {
			run(1, results.ContractError, 41, 1), run(3, results.Pass, 80, 1), run(3, results.Unavailable, 900, 2)}}},
		{"default limit takes all", []string{es, weather}, 0, runs{
			es: {run(0, results.Pass, 221, 2), run(1, results.ContractError, 41, 1),
				run(3, results.Pass, 80, 1), run(3, results.Unavailable, 900, 2)},
			weather: {run(2, results.Unavailable, 15600, 3)}}},
		{"a probe without runs has no entry", []string{"nope", weather}, 1, runs{
			weather: {run(2, results.Unavailable, 15600, 3)}}},
		{"a probe named twice is read once", []string{weather, weather}, 5, runs{
			weather: {run(2, results.Unavailable, 15600, 3)}}},
		{"no probes", nil, 5, runs{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.RecentRuns(ctx, tt.probes, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RecentRuns(%q, %d)\n got %+v\nwant %+v", tt.probes, tt.n, got, tt.want)
			}
		})
	}
}

func lastDrifts(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	drift := func(id, probe string, at time.Time, diff ...string) results.Drift {
		r := runAt(id, probe, at, results.ContractError, "unsupported_results_container", 10, 1)
		d := results.Drift{Kind: results.DriftResponse, Probe: probe, OperationID: id, DetectedAt: at, Baseline: fpList, Current: fpMap, Diff: diff}
		recordRun(t, s, &results.RunRecord{Result: r, Drift: &d})
		return d
	}
	drift("d1", "external_search", minute(0), driftDiff...)
	last := drift("d2", "external_search", minute(2), "a: added (null)")
	weather := drift("d3", "weather", minute(1), "temp: number -> string")
	record(t, s, runAt("calm", "calm", minute(3), results.Pass, "", 1, 1))

	got, err := s.LastDrifts(ctx, []string{"external_search", "weather", "calm", "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]results.Drift{"external_search": last, "weather": weather}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LastDrifts\n got %+v\nwant %+v", got, want)
	}
}

func latestPassSamples(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if got, err := s.LatestPassSamples(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("LatestPassSamples on an empty store: got %v, %v, want an empty map", got, err)
	}
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	shape := func(fp string) *results.Shape {
		return &results.Shape{Fingerprint: fp, Canonical: "object{" + fp + ":number}"}
	}
	// run is a run of probe with outcome, at minute m, showing fingerprint
	// fp and bringing sample ("" brings none).
	run := func(id, probe string, m int, outcome results.Outcome, fp, sample string) results.Result {
		code := results.Code("")
		if outcome != results.Pass {
			code = "unsupported_results_container"
		}
		r := runAt(id, probe, minute(m), outcome, code, 10, 1)
		r.Shape = shape(fp)
		r.Shape.Sample = sample
		return r
	}
	const (
		fpOld, fpNew, fpBroken, fpBare, fpTieA, fpTieB = "1111111111111111", "2222222222222222",
			"3333333333333333", "4444444444444444", "5555555555555555", "6666666666666666"
	)
	record(t, s,
		// external_search: an older pass, its latest pass, then a failure.
		run("es-1", "external_search", 0, results.Pass, fpOld, `{"old":1}`),
		run("es-2", "external_search", 2, results.Pass, fpNew, `{"new":1}`),
		run("es-3", "external_search", 3, results.ContractError, fpBroken, `{"broken":1}`),
		// weather never passed.
		run("w-1", "weather", 1, results.ContractError, fpBroken, ""),
		// bare: its latest pass has a shape without a sample; an older
		// pass's shape has one, and must not stand in for it.
		run("b-1", "bare", 0, results.Pass, fpOld, ""),
		run("b-2", "bare", 4, results.Pass, fpBare, ""),
		// borrowed: its shape's sample was brought by another probe's run.
		run("x-1", "borrowed", 5, results.Pass, fpNew, ""),
		// tie: two passes in one millisecond; the one recorded last is the
		// latest, as in history.
		run("t-2", "tie", 6, results.Pass, fpTieB, `{"b":1}`),
		run("t-1", "tie", 6, results.Pass, fpTieA, `{"a":1}`),
	)
	type samples = map[string]results.PassSample
	es := results.PassSample{Probe: "external_search", OperationID: "es-2", StartedAt: minute(2),
		Fingerprint: fpNew, Body: `{"new":1}`}
	borrowed := results.PassSample{Probe: "borrowed", OperationID: "x-1", StartedAt: minute(5),
		Fingerprint: fpNew, Body: `{"new":1}`}
	tie := results.PassSample{Probe: "tie", OperationID: "t-1", StartedAt: minute(6),
		Fingerprint: fpTieA, Body: `{"a":1}`}
	tests := []struct {
		name   string
		probes []string
		want   samples
	}{
		{"the latest pass, not a later failure or an earlier pass", []string{"external_search"},
			samples{"external_search": es}},
		{"no pass, no sample, no runs: absent", []string{"weather", "bare", "unknown"}, samples{}},
		{"a sample another probe brought", []string{"borrowed"}, samples{"borrowed": borrowed}},
		{"of two in one millisecond, the last recorded", []string{"tie"}, samples{"tie": tie}},
		{"a probe named twice", []string{"tie", "tie"}, samples{"tie": tie}},
		{"all probes", nil, samples{"external_search": es, "borrowed": borrowed, "tie": tie}},
		{"all probes, empty list", []string{}, samples{"external_search": es, "borrowed": borrowed, "tie": tie}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.LatestPassSamples(ctx, tt.probes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("LatestPassSamples(%q)\n got  %+v\n want %+v", tt.probes, got, tt.want)
			}
		})
	}
}
