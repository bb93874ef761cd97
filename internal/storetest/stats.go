package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// statsPercentiles checks nearest-rank percentiles on known
// distributions, recorded in shuffled order, with runs outside the window
// that must not count: exact below 128 ms, and from 128 ms on the middle
// of the bucket that holds the run at the rank (2 ms wide from 128 ms, 4
// from 256, 8 from 512, 16 from 1024, 32 from 2048).
func statsPercentiles(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	ms := time.Millisecond
	dists := map[string][]int{
		"one-to-hundred": {},
		"tens":           {10, 20, 30, 40, 50, 60, 70, 80, 90, 100},
		"single":         {7},
		"two":            {9, 5},
		"repeats":        {3, 8, 3, 3},
		"wide":           {},
		"around 128":     {127, 128, 129, 255, 256},
		"two seconds":    {2000, 2047, 2048},
	}
	for i := 1; i <= 100; i++ {
		dists["one-to-hundred"] = append(dists["one-to-hundred"], i)
		dists["wide"] = append(dists["wide"], 10*i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	n := 0
	for probe, ds := range dists {
		shuffled := append([]int(nil), ds...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i, d := range shuffled {
			n++
			record(t, s, runAt(fmt.Sprint("p", n), probe, t0.Add(time.Duration(i)*time.Second), results.Pass, "", d, 1))
		}
		n++
		record(t, s, runAt(fmt.Sprint("p", n), probe, t0.Add(-time.Second), results.Pass, "", 99999, 1))
	}
	got, err := s.Stats(ctx, t0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]time.Duration{
		"one-to-hundred": {50 * ms, 95 * ms, 99 * ms},
		"tens":           {50 * ms, 100 * ms, 100 * ms},
		"single":         {7 * ms, 7 * ms, 7 * ms},
		"two":            {5 * ms, 9 * ms, 9 * ms},
		"repeats":        {3 * ms, 8 * ms, 8 * ms},
		// 500 ms is in [500, 503], 950 in [944, 951], 990 in [984, 991].
		"wide": {501 * ms, 947 * ms, 987 * ms},
		// Rank 3 of 5 is 129 ms, in [128, 129]; rank 5 is 256 ms, in
		// [256, 259].
		"around 128": {128 * ms, 257 * ms, 257 * ms},
		// 2047 ms is in [2032, 2047], 2048 in [2048, 2079].
		"two seconds": {2039 * ms, 2063 * ms, 2063 * ms},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d probes, want %d", len(got), len(want))
	}
	for _, p := range got {
		if ps := [3]time.Duration{p.P50, p.P95, p.P99}; ps != want[p.Probe] {
			t.Errorf("%s: p50, p95, p99 = %v, want %v", p.Probe, ps, want[p.Probe])
		}
		if p.Runs != len(dists[p.Probe]) {
			t.Errorf("%s: %d runs, want %d", p.Probe, p.Runs, len(dists[p.Probe]))
		}
	}
}

// statsOutcomeSince checks the start of the current streak, also when
// it began before the window, when runs share a start, and when the
// window ends before the latest run.
func statsOutcomeSince(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	end := t0
	h := func(hours int) time.Time { return end.Add(time.Duration(hours) * time.Hour) }
	n := 0
	add := func(probe string, at time.Time, o results.Outcome) {
		n++
		code := map[results.Outcome]results.Code{results.ContractError: results.CodeInvalidJSON,
			results.Unavailable: results.CodeTimeout}[o]
		record(t, s, runAt(fmt.Sprint("s", n), probe, at, o, code, 10, 1))
	}
	pass, contract, unavail := results.Pass, results.ContractError, results.Unavailable
	// Failing since two days ago; the window sees only the last run.
	add("long-failure", h(-72), pass)
	add("long-failure", h(-48), contract)
	add("long-failure", h(-30), contract)
	add("long-failure", h(-2), contract)
	// Never anything but pass: since the first run ever.
	add("always-pass", h(-100), pass)
	add("always-pass", h(-50), pass)
	add("always-pass", h(-1), pass)
	// The streak broke on the other failure outcome, not on a pass.
	add("two-failures", h(-20), pass)
	add("two-failures", h(-15), unavail)
	add("two-failures", h(-10), contract)
	add("two-failures", h(-5), contract)
	// Same start, contract_error recorded first: the pass after it (same
	// millisecond, recorded later) starts the streak.
	add("tie-pass-last", h(-3), contract)
	add("tie-pass-last", h(-3), pass)
	add("tie-pass-last", h(-1), pass)
	// Same start, pass recorded first: the contract_error ends its streak.
	add("tie-pass-first", h(-3), pass)
	add("tie-pass-first", h(-3), contract)
	add("tie-pass-first", h(-1), pass)
	// A recovery after the window does not count.
	add("ends-early", h(-30), pass)
	add("ends-early", h(-10), pass)
	add("ends-early", h(-5), unavail)
	add("ends-early", h(-4), unavail)
	add("ends-early", h(-1), pass)

	type streak struct {
		outcome     results.Outcome
		last, since time.Time
	}
	check := func(since, until time.Time, want map[string]streak) {
		t.Helper()
		got, err := s.Stats(ctx, since, until)
		if err != nil {
			t.Fatal(err)
		}
		gotM := map[string]streak{}
		for _, p := range got {
			gotM[p.Probe] = streak{p.LastOutcome, p.LastStartedAt, p.OutcomeSince}
		}
		if !reflect.DeepEqual(gotM, want) {
			t.Errorf("window [%v, %v):\n got  %v\n want %v", since, until, gotM, want)
		}
	}
	check(h(-24), time.Time{}, map[string]streak{
		"long-failure":   {contract, h(-2), h(-48)},
		"always-pass":    {pass, h(-1), h(-100)},
		"two-failures":   {contract, h(-5), h(-10)},
		"tie-pass-last":  {pass, h(-1), h(-3)},
		"tie-pass-first": {pass, h(-1), h(-1)},
		"ends-early":     {pass, h(-1), h(-1)},
	})
	check(h(-24), h(-2), map[string]streak{
		"two-failures":   {contract, h(-5), h(-10)},
		"tie-pass-last":  {pass, h(-3), h(-3)},
		"tie-pass-first": {contract, h(-3), h(-3)},
		"ends-early":     {unavail, h(-4), h(-5)},
	})
	check(h(-24), h(-9), map[string]streak{
		"two-failures": {contract, h(-10), h(-10)},
		"ends-early":   {pass, h(-10), h(-30)},
	})
}

func statsDriftEvents(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	since, until := t0, t0.Add(time.Hour)
	n := 0
	run := func(probe string, at time.Time, drift bool) {
		n++
		id := fmt.Sprint("d", n)
		rec := &results.RunRecord{Result: runAt(id, probe, at, results.ContractError, results.CodeInvalidJSON, 10, 1)}
		if drift {
			rec.Drift = &results.Drift{Kind: results.DriftResponse, Probe: probe, OperationID: id, DetectedAt: at,
				Baseline: fpList, Current: fpMap, Diff: driftDiff}
		}
		recordRun(t, s, rec)
	}
	run("es", since.Add(-time.Millisecond), true) // before
	run("es", since, true)                        // at since: in
	run("es", since.Add(time.Minute), true)
	run("es", since.Add(2*time.Minute), false)
	run("es", until, true) // at until: out
	run("weather", since.Add(time.Minute), true)
	run("quiet", since.Add(time.Minute), false)
	run("gone", since.Add(-time.Hour), true) // no run in the window: no row

	got, err := s.Stats(ctx, since, until)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range got {
		counts[p.Probe] = p.DriftEvents
	}
	if want := map[string]int{"es": 2, "weather": 1, "quiet": 0}; !reflect.DeepEqual(counts, want) {
		t.Errorf("drift events: got %v, want %v", counts, want)
	}
}

func statsEmpty(t *testing.T, impl Impl) {
	s := impl.Open(t)
	got, err := s.Stats(context.Background(), time.Time{}, time.Time{})
	if err != nil || len(got) != 0 {
		t.Errorf("empty store: got %+v, %v", got, err)
	}
}

// statsLastKind checks the kind of probe, and the MCP tool and server,
// of each probe's last run in the window: a probe that changed kind shows
// the kind of its last run, now when the window ends now, then when it
// ends in the past.
func statsLastKind(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	h := func(hours int) time.Time { return t0.Add(time.Duration(hours) * time.Hour) }
	mcp := func(id, probe string, at time.Time, tool string) results.Result {
		r := runAt(id, probe, at, results.Pass, "", 10, 1)
		r.Kind = results.ProbeMCP
		r.MCP = &results.MCPTarget{Tool: tool, Server: "http://127.0.0.1:3901/mcp"}
		return r
	}
	steps := stepsRun("k-steps")
	steps.StartedAt = h(-1)
	record(t, s,
		runAt("k1", "plain", h(-3), results.Pass, "", 10, 1),
		// Was an HTTP probe, then calls a tool, then another.
		runAt("k2", "became-mcp", h(-3), results.Pass, "", 10, 1),
		mcp("k3", "became-mcp", h(-2), "get-weather"),
		mcp("k4", "became-mcp", h(-1), "get-forecast"),
		// Called a tool, now an HTTP probe.
		mcp("k5", "left-mcp", h(-3), "get-weather"),
		runAt("k6", "left-mcp", h(-1), results.Pass, "", 10, 1),
		steps)

	type kind struct {
		kind results.ProbeKind
		mcp  results.MCPTarget
	}
	weather := results.MCPTarget{Tool: "get-weather", Server: "http://127.0.0.1:3901/mcp"}
	forecast := results.MCPTarget{Tool: "get-forecast", Server: weather.Server}
	check := func(until time.Time, want map[string]kind) {
		t.Helper()
		got, err := s.Stats(ctx, h(-24), until)
		if err != nil {
			t.Fatal(err)
		}
		gotM := map[string]kind{}
		for _, p := range got {
			k := kind{kind: p.LastKind}
			if p.LastMCP != nil {
				k.mcp = *p.LastMCP
			}
			gotM[p.Probe] = k
		}
		if !reflect.DeepEqual(gotM, want) {
			t.Errorf("window until %v:\n got  %v\n want %v", until, gotM, want)
		}
	}
	check(time.Time{}, map[string]kind{
		"plain":           {kind: results.ProbeHTTP},
		"became-mcp":      {results.ProbeMCP, forecast},
		"left-mcp":        {kind: results.ProbeHTTP},
		"refund_order_31": {kind: results.ProbeSteps},
	})
	check(h(-1), map[string]kind{
		"plain":      {kind: results.ProbeHTTP},
		"became-mcp": {results.ProbeMCP, weather},
		"left-mcp":   {results.ProbeMCP, weather},
	})
	check(h(-2), map[string]kind{
		"plain":      {kind: results.ProbeHTTP},
		"became-mcp": {kind: results.ProbeHTTP},
		"left-mcp":   {results.ProbeMCP, weather},
	})
}
