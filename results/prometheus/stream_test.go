package prometheus_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	metrics "github.com/toolpulse/toolpulse/results/prometheus"
)

// scrapeText returns the body h serves to a scrape with the given Accept
// header, without the Go runtime's and the process's families, which
// change between two scrapes.
func scrapeText(t *testing.T, h http.Handler, accept string) (string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var b strings.Builder
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name := line
		if strings.HasPrefix(line, "# ") {
			name = strings.Fields(line)[2]
		}
		if strings.HasPrefix(name, "toolpulse_go_") || strings.HasPrefix(name, "toolpulse_process_") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String(), rec.Header().Get("Content-Type")
}

// TestStreamedScrape: a text scrape through Metrics.Handler serves byte
// for byte what the registry's handler serves, across probes that never
// ran, passed, failed with built-in and custom codes, retried, drifted,
// with names that need escaping, HTTP and MCP probe infos, in the default
// location and another; other formats are the registry's.
func TestStreamedScrape(t *testing.T) {
	for _, location := range []string{results.DefaultLocation, "eu-west"} {
		t.Run("location="+location, func(t *testing.T) {
			reg := metrics.NewRegistry()
			m, err := metrics.NewAt(reg, location)
			if err != nil {
				t.Fatal(err)
			}
			h, plain := m.Handler(reg), metrics.Handler(reg)
			compare := func(stage string) {
				t.Helper()
				for _, accept := range []string{"", "text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"} {
					got, gotType := scrapeText(t, h, accept)
					want, wantType := scrapeText(t, plain, accept)
					if got != want || gotType != wantType {
						t.Errorf("%s, Accept %q: streamed (%s)\n%s\nregistry (%s)\n%s", stage, accept, gotType, got, wantType, want)
					}
				}
			}
			compare("no probes")
			names, rs := fleet(30)
			names = append(names, "never_ran", `quote"d`, `back\slash`, "new\nline", "zürich")
			m.SetProbes(names)
			compare("probes set, none ran")
			m.SetProbeInfo([]metrics.ProbeInfo{
				{Probe: "never_ran", Kind: results.ProbeMCP, Tool: "search"},
				{Probe: `quote"d`, Kind: results.ProbeHTTP},
				{Probe: "zürich", Kind: results.ProbeSteps},
				{Probe: "probe-00001"},
			})
			for _, r := range rs {
				m.RunFinished(r)
			}
			for _, name := range []string{`quote"d`, `back\slash`, "new\nline", "zürich"} {
				m.RunFinished(run(name, results.Code("custom_"+name[:1]), 20*time.Millisecond, 2, 0))
				m.RunFinished(run(name, "", 3*time.Second, 1, 7))
			}
			m.RunFinished(run("probe-00002", "", 45*time.Second, 1, 3))
			m.DriftDetected(&results.Drift{Kind: results.DriftResponse, Probe: "probe-00003"})
			m.DriftDetected(&results.Drift{Kind: results.DriftDefinition, Probe: "probe-00004"})
			m.AlertDelivered(&results.Alert{Kind: results.AlertFiring, Probe: "probe-00001"})
			compare("after runs")
		})
	}
}

// TestStreamedScrapeProtobuf: a scraper that asks for protobuf gets the
// registry's answer.
func TestStreamedScrapeProtobuf(t *testing.T) {
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.SetProbes([]string{"search"})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
	m.Handler(reg).ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || !strings.Contains(ct, "protobuf") {
		t.Fatalf("HTTP %d, Content-Type %q", rec.Code, ct)
	}
	_, _ = io.Copy(io.Discard, rec.Body)
	_ = context.Background()
}

// TestStreamedScrapeAllocations: a streamed scrape allocates about as
// often for 2,000 probes as for 1,000, where the registry's way
// allocates some 40 times per probe.
func TestStreamedScrapeAllocations(t *testing.T) {
	allocs := func(n int) float64 {
		reg := metrics.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		names, rs := fleet(n)
		m.SetProbes(names)
		for _, r := range rs {
			m.RunFinished(r)
		}
		h := m.Handler(reg)
		return testing.AllocsPerRun(3, func() {
			h.ServeHTTP(discardWriter{http.Header{}}, httptest.NewRequest("GET", "/metrics", nil))
		})
	}
	small, big := allocs(1000), allocs(2000)
	if big-small > 100 {
		t.Errorf("a scrape of 1,000 probes allocates %.0f times, of 2,000 %.0f: it grows with the probes", small, big)
	}
}

// discardWriter is a ResponseWriter that keeps nothing of the body.
type discardWriter struct{ h http.Header }

func (w discardWriter) Header() http.Header         { return w.h }
func (w discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w discardWriter) WriteHeader(int)             {}
