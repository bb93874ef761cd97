package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// chromium returns the browser to test the status page in. Without one
// the test is skipped, unless TOOLPULSE_BROWSER_TEST=required (CI sets
// it), where a missing browser fails the test instead: a status page that
// was never looked at is not tested.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TOOLPULSE_BROWSER_TEST") == "required" {
		t.Fatal("no chromium on PATH, and TOOLPULSE_BROWSER_TEST=required")
	}
	t.Skip("no chromium on PATH (set TOOLPULSE_BROWSER_TEST=required to fail instead)")
	return ""
}

// newBrowser starts a headless Chromium with scripts disabled in its pages
// (the status page must work without them) and returns a tab.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	if _, err := chromedp.Call(tab, emulation.SetScriptExecutionDisabled,
		emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return tab
}

// TestStatusPageInBrowser starts the real daemon against the example
// provider (one healthy probe, one that the seed-000 drift breaks, one
// whose host is down), loads the status page in headless Chromium with
// scripts off, and checks what a person sees: each probe's state in words
// and distinct colours, the strips and sparklines, the drift diff, the way
// to a probe's page with its runs and failure sample, and a page that
// refreshes itself. Set TOOLPULSE_SCREENSHOTS to a folder to keep
// screenshots of both pages.
func TestStatusPageInBrowser(t *testing.T) {
	browser := chromium(t)
	p := provider.New()
	prov := e2e.Serve(t, p.Handler())
	selectResults, err := filepath.Abs("../../consumers/select_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, addr := t.TempDir(), e2e.FreeAddr(t)
	cfg := harness.Fast(prov, "", "strict")
	cfg.Server.Listen = addr
	// The strip draws the last 50 runs: at one run a second, strict's
	// passes stay in it for most of a minute however slowly Chromium starts.
	cfg.Defaults.Interval = time.Second
	cfg.Consumers = append([]harness.Consumer{{Name: "select_results", File: selectResults}}, cfg.Consumers...)
	healthy := harness.SearchProbe("healthy", prov+"/search")
	healthy.Request.Headers = map[string]string{"Authorization": "Bearer " + testSecret}
	healthy.Consumer, healthy.Labels = "select_results", map[string]string{"team": "search"}
	cfg.Probes = append(cfg.Probes, healthy,
		harness.Probe{Name: "dead", Request: harness.Request{URL: "http://" + e2e.FreeAddr(t) + "/gone"}, Consumer: "select_results"})
	db := filepath.Join(dir, "results.db")
	d := e2e.Start(t, e2e.Config(t, dir, cfg))
	rows := func(probe, outcome string) int {
		return countRows(t, db, "SELECT count(*) FROM results WHERE probe = ? AND outcome = ?", probe, outcome)
	}
	// Drift needs a baseline seen five times.
	d.WaitFor("strict to pass", func() bool { return rows("strict", "pass") >= 6 })
	p.SetDrifted(true)
	d.WaitFor("strict to break and drift, and dead to fail", func() bool {
		return rows("strict", "contract_error") >= 3 && rows("dead", "unavailable") >= 2 && rows("healthy", "pass") >= 3 &&
			countRows(t, db, "SELECT count(*) FROM drifts WHERE probe = 'strict'") == 1
	})

	tab := newBrowser(t, browser)
	base := "http://" + addr
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, 15*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, actions...); err != nil {
			d.T.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			d.T.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	count := func(sel string) int {
		t.Helper()
		nodes, err := chromedp.Run(tab, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
		if err != nil {
			d.T.Fatalf("nodes %s: %v", sel, err)
		}
		return len(nodes)
	}
	style := func(sel, property string) string {
		t.Helper()
		props, err := chromedp.Run(tab, chromedp.ComputedStyle(chromedp.CSS(sel)))
		if err != nil {
			d.T.Fatalf("style of %s: %v", sel, err)
		}
		for _, p := range props {
			if p.Name == property {
				return p.Value
			}
		}
		return ""
	}
	html := func() string {
		t.Helper()
		s, err := chromedp.Run(tab, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			d.T.Fatal(err)
		}
		return s
	}
	screenshot := func(name string) {
		t.Helper()
		dir := os.Getenv("TOOLPULSE_SCREENSHOTS")
		if dir == "" {
			return
		}
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			d.T.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			d.T.Fatal(err)
		}
	}

	// The overview, with the refresh off so that it holds still.
	do("loading the overview", chromedp.Navigate(base+"/?refresh=0"), chromedp.WaitVisible(chromedp.CSS("table.probes")))
	if title, _ := chromedp.Run(tab, chromedp.Title()); title != "toolpulse status" {
		d.T.Errorf("title %q", title)
	}
	order, err := chromedp.Run(tab, chromedp.Nodes(chromedp.CSSAll("tr.probe")))
	if err != nil {
		d.T.Fatal(err)
	}
	var names []string
	for _, n := range order {
		names = append(names, n.AttributeValue("data-probe"))
	}
	if got := strings.Join(names, " "); got != "dead strict healthy" {
		d.T.Errorf("rows %q, want the failing first: dead strict healthy", got)
	}
	colours := map[string]string{}
	for probe, word := range map[string]string{"healthy": "✓ pass", "strict": "✗ contract_error", "dead": "! unavailable"} {
		badge := fmt.Sprintf(`tr[data-probe=%q] .badge`, probe)
		if got := text(badge); got != word {
			d.T.Errorf("%s shows %q, want %q", probe, got, word)
		}
		colours[probe] = style(badge, "background-color")
	}
	if colours["healthy"] != "rgb(26, 127, 55)" {
		d.T.Errorf("pass badge colour %q: the stylesheet did not apply (blocked by the Content-Security-Policy?)", colours["healthy"])
	}
	if colours["healthy"] == colours["strict"] || colours["strict"] == colours["dead"] || colours["healthy"] == colours["dead"] {
		d.T.Errorf("states share a colour: %v", colours)
	}
	for _, sel := range []string{
		`tr[data-probe="strict"] svg.strip`, `tr[data-probe="strict"] svg.spark polyline`, `tr[data-probe="strict"] pre.diff`,
	} {
		do("seeing "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	}
	if count(`tr[data-probe="strict"] svg.strip path.pass`) != 1 || count(`tr[data-probe="strict"] svg.strip path.contract_error`) != 1 {
		d.T.Errorf("the strict strip does not show both its passes and its contract errors")
	}
	if got := text(`tr[data-probe="strict"] pre.diff`); !strings.Contains(got, "results: list<object(3 keys)> -> object(1 keys)") {
		d.T.Errorf("strict's drift shows %q, want the seed-000 diff line", got)
	}
	if got := text(`tr[data-probe="dead"]`); !strings.Contains(got, "connection_refused") {
		d.T.Errorf("dead's row says %q, want its code", got)
	}
	if strings.Contains(html(), testSecret) {
		d.T.Errorf("the overview shows the probe's secret header")
	}
	screenshot("overview.png")

	// A click on a probe leads to its page.
	if _, err := chromedp.Run(tab, chromedp.WaitEvent(cdppage.LoadEventFired, nil,
		chromedp.Click(chromedp.CSS(`tr[data-probe="strict"] a.name`)))); err != nil {
		d.T.Fatalf("following the link to strict: %v", err)
	}
	do("loading strict's page", chromedp.WaitVisible(chromedp.CSS("table.runs")))
	if got := text("h1"); got != "strict ✗ contract_error" {
		d.T.Errorf("strict's heading %q", got)
	}
	if got := text("pre.sample"); !strings.Contains(got, `"items"`) {
		d.T.Errorf("the last failure's sample %q, want the drifted body", got)
	}
	if got := text(".failure"); !strings.Contains(got, "unsupported_results_container") {
		d.T.Errorf("the last failure %q lacks its code", got)
	}
	if n := count("table.runs tbody tr"); n < 6 {
		d.T.Errorf("strict's page lists %d runs, want its passes and failures", n)
	}
	screenshot("probe.png")

	// A click on a run leads to the run's page, with its attempts.
	if _, err := chromedp.Run(tab, chromedp.WaitEvent(cdppage.LoadEventFired, nil,
		chromedp.Click(chromedp.CSS(`table.runs tbody tr a`)))); err != nil {
		d.T.Fatalf("following the link to strict's latest run: %v", err)
	}
	do("loading the run's page", chromedp.WaitVisible(chromedp.CSS("table.attempts")))
	if got := text("h1"); !strings.HasPrefix(got, "Run of strict") {
		d.T.Errorf("the run page's heading %q", got)
	}
	if n := count("table.attempts tbody tr"); n < 1 {
		d.T.Errorf("the run page lists %d attempts, want the run's", n)
	}
	screenshot("run.png")

	// The page refreshes itself, without a script.
	do("loading the overview", chromedp.Navigate(base+"/?refresh=5"), chromedp.WaitVisible(chromedp.CSS("footer")))
	first := text("footer time")
	wait, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wait, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Sleep(0))); err != nil {
		d.T.Fatalf("waiting for the refresh: %v", err)
	}
	if again := text("footer time"); again == first {
		d.T.Errorf("the page did not refresh: generated at %s both times", first)
	}
}
