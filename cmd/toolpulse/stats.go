package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

type statsCmd struct {
	Since    string   `default:"24h" placeholder:"WHEN" help:"Window start: a duration ago or an RFC 3339 time or date (default 24h)."`
	Until    string   `placeholder:"WHEN" help:"Window end (default now)."`
	Location []string `placeholder:"L" help:"Only runs from this location, its fleet.location (repeatable)."`
	Format   string   `enum:"table,json,csv" default:"table" help:"Output: table, json (one object per line) or csv."`
}

// Run prints, per probe, what happened in the window: runs, outcome rates,
// the runs that passed only after retries, latency percentiles and drift,
// with the kind of probe (and MCP tool) of its last run in the window: the
// kind it is now with the default window, the kind it was then for a
// window that ends in the past. With --location, only the runs from those
// locations count, last run and streak included.
func (s *statsCmd) Run(e *env, root *cli) error {
	now := time.Now()
	since, err := present.ParseInstant(s.Since, now)
	if err != nil {
		return usageError("--since: %v", err)
	}
	until, err := present.ParseInstant(s.Until, now)
	if err != nil {
		return usageError("--until: %v", err)
	}
	if until.IsZero() {
		until = now
	}
	for _, l := range s.Location {
		if !checks.ValidLocation(l) {
			return usageError("--location: %q is not a location name (lower-case letters, digits and -)", l)
		}
	}
	store, _, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return err
	}
	defer store.Close()
	stats, err := store.Stats(e.ctx, since, until, s.Location...)
	if err != nil {
		return softwareError(err)
	}
	rows := make([]statsRow, len(stats))
	for i := range stats {
		rows[i] = toStatsRow(&stats[i])
	}
	switch s.Format {
	case "json":
		err = writeStatsJSON(e.stdout, rows)
	case "csv":
		err = writeStatsCSV(e.stdout, rows)
	default:
		err = writeStatsTable(e.stdout, stats, useColour(e))
	}
	if err != nil {
		return softwareError(err)
	}
	return nil
}

// statsRow is the JSON and CSV form of one probe's statistics.
type statsRow struct {
	Probe              string          `json:"probe"`
	Runs               int             `json:"runs"`
	Pass               int             `json:"pass"`
	ContractError      int             `json:"contract_error"`
	Unavailable        int             `json:"unavailable"`
	PassRate           float64         `json:"pass_rate"`
	ContractErrorRate  float64         `json:"contract_error_rate"`
	UnavailableRate    float64         `json:"unavailable_rate"`
	PassedAfterRetries int             `json:"passed_after_retries"`
	Retries            int             `json:"retries"`
	P50MS              int64           `json:"p50_ms"`
	P95MS              int64           `json:"p95_ms"`
	P99MS              int64           `json:"p99_ms"`
	DriftEvents        int             `json:"drift_events"`
	LastOutcome        results.Outcome `json:"last_outcome"`
	LastCode           *string         `json:"last_code"`
	LastStartedAt      string          `json:"last_started_at"`
	OutcomeSince       string          `json:"outcome_since"`
	Kind               string          `json:"kind"`
	MCPTool            *string         `json:"mcp_tool"`
	MCPServer          *string         `json:"mcp_server"`
}

func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// toStatsRow is p as JSON and CSV show it, with the kind, tool and server
// of the last run in the window.
func toStatsRow(p *results.ProbeStats) statsRow {
	row := statsRow{
		Probe: p.Probe, Runs: p.Runs, Pass: p.Pass, ContractError: p.ContractError, Unavailable: p.Unavailable,
		PassRate: rate(p.Pass, p.Runs), ContractErrorRate: rate(p.ContractError, p.Runs),
		UnavailableRate: rate(p.Unavailable, p.Runs), PassedAfterRetries: p.PassedAfterRetries, Retries: p.Retries,
		P50MS: p.P50.Milliseconds(), P95MS: p.P95.Milliseconds(), P99MS: p.P99.Milliseconds(),
		DriftEvents: p.DriftEvents, LastOutcome: p.LastOutcome, LastCode: optString(string(p.LastCode)),
		LastStartedAt: results.FormatTime(p.LastStartedAt), OutcomeSince: results.FormatTime(p.OutcomeSince),
		Kind: string(p.LastKind),
	}
	if p.LastMCP != nil {
		row.MCPTool, row.MCPServer = &p.LastMCP.Tool, &p.LastMCP.Server
	}
	return row
}

func writeStatsJSON(w io.Writer, rows []statsRow) error {
	enc := json.NewEncoder(w)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func writeStatsCSV(w io.Writer, rows []statsRow) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"probe", "runs", "pass", "contract_error", "unavailable", "pass_rate",
		"contract_error_rate", "unavailable_rate", "passed_after_retries", "retries", "p50_ms", "p95_ms",
		"p99_ms", "drift_events", "last_outcome", "last_code", "last_started_at", "outcome_since",
		"kind", "mcp_tool", "mcp_server"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, r := range rows {
		deref := func(s *string) string {
			if s == nil {
				return ""
			}
			return csvCell(*s)
		}
		code := deref(r.LastCode)
		_ = cw.Write([]string{csvCell(r.Probe), strconv.Itoa(r.Runs), strconv.Itoa(r.Pass), strconv.Itoa(r.ContractError),
			strconv.Itoa(r.Unavailable), f(r.PassRate), f(r.ContractErrorRate), f(r.UnavailableRate),
			strconv.Itoa(r.PassedAfterRetries), strconv.Itoa(r.Retries), strconv.FormatInt(r.P50MS, 10),
			strconv.FormatInt(r.P95MS, 10), strconv.FormatInt(r.P99MS, 10), strconv.Itoa(r.DriftEvents),
			string(r.LastOutcome), code, r.LastStartedAt, r.OutcomeSince, csvCell(r.Kind), deref(r.MCPTool),
			deref(r.MCPServer)})
	}
	cw.Flush()
	return cw.Error()
}

// writeStatsTable prints stats with, when any probe's last run in the
// window is an MCP probe's, a TOOL column.
func writeStatsTable(w io.Writer, stats []results.ProbeStats, colour bool) error {
	if len(stats) == 0 {
		_, err := fmt.Fprintln(w, "no recorded runs in this window")
		return err
	}
	pct := func(n, of int) string { return fmt.Sprintf("%.1f%%", 100*rate(n, of)) }
	var withTool bool
	for _, p := range stats {
		if p.LastMCP != nil {
			withTool = true
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withTool {
		fmt.Fprint(tw, "PROBE\tTOOL\t")
	} else {
		fmt.Fprint(tw, "PROBE\t")
	}
	fmt.Fprintf(tw, "RUNS\tPASS\tCONTRACT\tUNAVAIL\tRETRIED PASS\tP50\tP95\tP99\tDRIFTS\t%s\tSINCE\n", paint("LAST", "", colour))
	for i := range stats {
		p := &stats[i]
		last := string(p.LastOutcome)
		if p.LastCode != "" {
			last += " (" + present.Printable(string(p.LastCode)) + ")"
		}
		fmt.Fprintf(tw, "%s\t", present.Printable(p.Probe))
		if withTool {
			fmt.Fprintf(tw, "%s\t", mcpToolText(p.LastMCP))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Runs,
			pct(p.Pass, p.Runs), pct(p.ContractError, p.Runs), pct(p.Unavailable, p.Runs), p.PassedAfterRetries,
			present.FormatLatency(p.P50), present.FormatLatency(p.P95), present.FormatLatency(p.P99), p.DriftEvents,
			paint(last, p.LastOutcome, colour), results.FormatTime(p.OutcomeSince))
	}
	return tw.Flush()
}
