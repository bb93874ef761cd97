package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakSmoke runs the soak mode through its shorthand for 15s with a
// reload every 4s and a sample every second. So short a soak proves
// nothing about leaks: it must say so (verdict inconclusive, exit 1),
// while its samples and reloads are checked.
func TestSoakSmoke(t *testing.T) {
	requireSQLiteShell(t)
	bin := testToolpulse(t)
	jsonPath := filepath.Join(t.TempDir(), "soak.json")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--soak", "15s",
		"--probes", "20", "--interval", "500ms", "--reload-every", "4s", "--sample-every", "1s",
		"--toolpulse", bin, "--json", jsonPath,
	}, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "toolpulse-bench soak: not flat: too short to judge") {
		t.Fatalf("exit %d, want %d for a soak too short to judge\nstderr:\n%s\nstdout:\n%s", code, exitFailed, stderr.String(), stdout.String())
	}
	for _, want := range []string{"verdict: inconclusive", "reloads", "heap in use"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the table does not mention %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	requireKeys(t, "report", raw, "mode", "setup", "reload_every_ms", "sample_every_ms", "swapped_probes",
		"flapping_probes", "drifting_probes", "reloads", "samples", "verdict", "operations", "slack_messages", "daemon", "notes")
	var rep soakReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}

	// Reloads at 4s, 8s and 12s; a busy machine may lose a tick.
	if r := rep.Reloads; r.Sent < 2 || r.Confirmed != r.Sent || r.ConfirmP50MS <= 0 || r.ConfirmMaxMS < r.ConfirmP50MS {
		t.Errorf("reloads %+v, want at least 2, every one confirmed", r)
	}
	// A sample at the start, about one a second, and one at the end.
	if n := len(rep.Samples); n < 8 {
		t.Errorf("%d samples, want about 16", n)
	}
	probeCounts := map[int]bool{}
	for i, s := range rep.Samples {
		// The daemon exports its Go runtime metrics, so the soak judges
		// goroutines and heap rather than falling back to /proc.
		if s.RSSBytes <= 0 || s.Threads <= 0 || s.Goroutines == nil || s.HeapInuseBytes == nil {
			t.Errorf("sample %d: %+v", i, s)
		}
		if i > 0 && (s.Seconds <= rep.Samples[i-1].Seconds || s.CPUSeconds < rep.Samples[i-1].CPUSeconds) {
			t.Errorf("sample %d goes back in time or CPU: %+v after %+v", i, s, rep.Samples[i-1])
		}
		probeCounts[s.Probes] = true
	}
	if last := rep.Samples[len(rep.Samples)-1]; last.Seconds < 14 || last.Runs <= 0 {
		t.Errorf("last sample %+v, want one at the end with runs counted", last)
	}
	// Both configs hold as many probes.
	if len(probeCounts) != 1 || !probeCounts[20] {
		t.Errorf("probes per sample %v, want 20 throughout", probeCounts)
	}
	if v := rep.Verdict; v.Verdict != verdictInconclusive || v.MemoryMetric != heapInuseMetric || v.AtEnd <= 0 {
		t.Errorf("verdict %+v", v)
	}
	ops := rep.Operations
	if ops.Runs <= 0 || ops.Pass <= 0 || ops.ResultsDropped != 0 {
		t.Errorf("operations %+v", ops)
	}
	// Flapping probes fire and resolve.
	if rep.SlackMessages[slackFiring] == 0 || rep.SlackMessages[slackResolved] == 0 {
		t.Errorf("Slack messages %v, want alerts firing and resolving", rep.SlackMessages)
	}
	if d := rep.Daemon; d.ExitCode != 0 || d.ErrorLines != 0 {
		t.Errorf("daemon %+v", d)
	}
}

func TestJudgeSoak(t *testing.T) {
	const mib = 1 << 20
	// series builds 40 samples over 200s: memory and goroutines as
	// functions of the sample's time.
	series := func(mem func(t float64) int64, g func(t float64) int, collector bool) []soakSample {
		var out []soakSample
		for i := range 41 {
			tt := float64(i) * 5
			s := soakSample{Seconds: tt, RSSBytes: mem(tt) + 10*mib, Threads: 8}
			if collector {
				h, n := mem(tt), g(tt)
				s.HeapInuseBytes, s.Goroutines = &h, &n
			}
			out = append(out, s)
		}
		return out
	}
	flatMem := func(t float64) int64 { return 30*mib + int64(t)%3*mib } // a saw tooth
	leakMem := func(t float64) int64 { return 30*mib + int64(t)*mib/4 } // +50 MiB over the run
	flatG := func(float64) int { return 120 }
	leakG := func(t float64) int { return 100 + int(t)/2 }
	d := 200 * time.Second
	for _, c := range []struct {
		name    string
		samples []soakSample
		d       time.Duration
		want    string
		metric  string
	}{
		{"flat", series(flatMem, flatG, true), d, verdictFlat, heapInuseMetric},
		{"heap leak", series(leakMem, flatG, true), d, verdictGrowing, heapInuseMetric},
		{"goroutine leak", series(flatMem, leakG, true), d, verdictGrowing, heapInuseMetric},
		{"no collector: RSS", series(leakMem, flatG, false), d, verdictGrowing, "VmRSS"},
		{"no collector, flat", series(flatMem, flatG, false), d, verdictFlat, "VmRSS"},
		{"too short", series(flatMem, flatG, true), time.Minute, verdictInconclusive, heapInuseMetric},
		{"no samples", nil, d, verdictInconclusive, heapInuseMetric},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := judgeSoak(c.samples, c.d)
			if got.Verdict != c.want || got.MemoryMetric != c.metric {
				t.Errorf("got %s on %s (%s), want %s on %s", got.Verdict, got.MemoryMetric, got.Reason, c.want, c.metric)
			}
		})
	}
	// The goroutine baseline is the first sample after the warm-up.
	v := judgeSoak(series(flatMem, leakG, true), d)
	if v.AfterWarmup != 100+40/2 || v.AtEnd != 200 || v.CountLimit != 120+12 {
		t.Errorf("goroutines: after warm-up %d, at end %d, limit %d", v.AfterWarmup, v.AtEnd, v.CountLimit)
	}
}

func TestSoakSpecials(t *testing.T) {
	o := soakOptions{loadOptions: loadOptions{interval: time.Second, duration: 10 * time.Minute}}
	sp, flapping, drifting := soakSpecials(220, o)
	if flapping != 11 || drifting != 11 || len(sp) != 22 {
		t.Errorf("%d flapping, %d drifting, %d special", flapping, drifting, len(sp))
	}
	for _, s := range sp {
		if s.Period <= 0 || s.Period > time.Minute {
			t.Errorf("%+v: period", s)
		}
	}
}
