package prober

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// sized fills the PAD in template so that the body is n bytes once the
// provider has replaced each AUTH in it with an echo of echoLen bytes.
func sized(template string, n, echoLen int) string {
	echoes := strings.Count(template, "AUTH")
	pad := n - (len(template) - len("PAD") + echoes*(echoLen-len("AUTH")))
	return strings.Replace(template, "PAD", strings.Repeat("x", pad), 1)
}

// TestShapeSample runs probes against a provider that answers each request
// with the next body of a list, echoing the Authorization header wherever a
// body says AUTH, and checks which runs carry Shape.Sample: the first
// passing run of a probe and every change of shape among its passes (a
// sample is a body the consumer accepted, for mutation testing); not a
// failure, not a repeat of the shape, not a body over the cap once scrubbed; never the
// secret, and always valid UTF-8.
func TestShapeSample(t *testing.T) {
	// A prefix of the configured value "Bearer sk-test-SECRET".
	const secret = "sk-test"
	type step struct {
		probe  int    // which of two probes runs
		body   string // served, AUTH echoed
		reload bool   // CloseIdleConnections before the run, as a reload does
		sample bool   // the run's shape carries the body, scrubbed
		want   string // the sample, when it is not the body scrubbed
	}
	list := step{body: bodyOriginalList, sample: true}
	again := step{body: `{"results":[{"id":"doc_1","title":"Other","score":0.8}],"next_cursor":null}`}
	wrapped := step{body: bodyItemsWrapper, sample: true}
	wrappedAgain := step{body: bodyItemsWrapper}
	const (
		padded = `{"results":[{"id":"doc_784","score":0.93}],"pad":"PAD"}`
		echoed = `{"results":[{"id":"doc_784","score":0.93}],"echo":"AUTH AUTH","pad":"PAD"}`
		// The configured Authorization value, which the provider echoes.
		bearer = len("Bearer sk-test-SECRET")
	)
	tests := []struct {
		name  string
		auth  checks.Secret // the probes' Authorization header; "": testProbe's
		steps []step
	}{
		{name: "first run", steps: []step{list}},
		{name: "same shape again, other values", steps: []step{list, again, again}},
		{name: "shape changes and changes back", steps: []step{list, again, wrapped, wrappedAgain, list}},
		{name: "only a passing run brings a sample", steps: []step{
			{body: bodyMissing}, {body: bodyEmptyList}, list}},
		{name: "a failure between passes leaves the memory", steps: []step{list, {body: bodyEmptyList}, again}},
		{name: "a run without a shape leaves the memory", steps: []step{list, {body: bodyHTML}, again}},
		{name: "each probe has its own memory", steps: []step{list, {probe: 1, body: bodyOriginalList, sample: true}, again}},
		{name: "a reload forgets", steps: []step{list, {body: bodyOriginalList, reload: true, sample: true}, again}},
		{name: "a secret echoed is scrubbed", steps: []step{
			{body: `{"results":[{"id":"AUTH","score":0.9}],"AUTH":1}`, sample: true}}},
		{name: "invalid UTF-8 in a string", steps: []step{
			{body: "{\"results\":[{\"id\":\"doc_\xff\xfe\",\"score\":0.9}]}", sample: true,
				want: "{\"results\":[{\"id\":\"doc_\uFFFD\",\"score\":0.9}]}"}}},
		{name: "exactly the cap", steps: []step{{body: sized(padded, results.ShapeSampleBytes, 0), sample: true}}},
		{name: "one byte over the cap", steps: []step{{body: sized(padded, results.ShapeSampleBytes+1, 0)}}},
		{name: "over the cap until scrubbed", steps: []step{
			{body: sized(echoed, results.ShapeSampleBytes+5, bearer), sample: true}}},
		{name: "within the cap until scrubbed", auth: shortSecret, steps: []step{
			{body: sized(echoed, results.ShapeSampleBytes, len(shortSecret))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var served atomic.Int32
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				body := tt.steps[int(served.Add(1))-1].body
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, strings.ReplaceAll(body, "AUTH", r.Header.Get("Authorization")))
			})
			probes := []*checks.Probe{testProbe(t, url), testProbe(t, url)}
			probes[1].Name = "other_search"
			if tt.auth != "" {
				for _, p := range probes {
					p.Steps[0].Request.Headers["Authorization"] = tt.auth
				}
			}
			e := NewExecutor(Options{
				Redactor: (&checks.Config{Probes: probes}).Redactor(),
				Rand:     func() float64 { return 0.5 },
			})
			t.Cleanup(e.CloseIdleConnections)

			for i, s := range tt.steps {
				if s.reload {
					e.CloseIdleConnections()
				}
				got := e.Run(t.Context(), probes[s.probe])
				if s.body == bodyHTML {
					if got.Shape != nil {
						t.Fatalf("run %d: a page that is not JSON got a shape: %s", i+1, dump(got))
					}
					continue
				}
				if got.Shape == nil {
					t.Fatalf("run %d: no shape: %s", i+1, dump(got))
				}
				want := ""
				switch {
				case s.want != "":
					want = s.want
				case s.sample:
					want = strings.ReplaceAll(s.body, "AUTH", results.Redacted)
				}
				if got.Shape.Sample != want {
					t.Errorf("run %d: got a sample of %d bytes, want %d bytes\n got  %.200q\n want %.200q",
						i+1, len(got.Shape.Sample), len(want), got.Shape.Sample, want)
				}
				if strings.Contains(got.Shape.Sample, secret) || strings.Contains(got.Shape.Sample, shortSecret) {
					t.Errorf("run %d: the secret is in the sample: %.200q", i+1, got.Shape.Sample)
				}
			}
			if n := int(served.Load()); n != len(tt.steps) {
				t.Errorf("provider served %d requests, want %d", n, len(tt.steps))
			}
		})
	}
}

// shortSecret is a secret shorter than results.Redacted: scrubbing it makes
// a body longer.
const shortSecret = "k9Zq"
