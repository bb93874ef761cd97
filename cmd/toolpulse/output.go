package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// printResults writes results in the chosen format: "json" is one SPEC §6
// envelope per line; "text" is a table a person can scan, then a summary.
func printResults(w io.Writer, format string, all []results.Result) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false) // shape summaries contain < and >
		for i := range all {
			if err := enc.Encode(all[i].Envelope()); err != nil {
				return err
			}
		}
		return nil
	}
	return printTable(w, all)
}

func printTable(w io.Writer, all []results.Result) error {
	// As in history: a TOOL column only when an MCP probe ran.
	withTool := slices.ContainsFunc(all, func(r results.Result) bool { return r.MCP != nil })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if withTool {
		fmt.Fprint(tw, "PROBE\tTOOL\t")
	} else {
		fmt.Fprint(tw, "PROBE\t")
	}
	fmt.Fprintln(tw, "OUTCOME\tCODE\tATTEMPTS\tLATENCY\tHTTP\tMESSAGE")
	counts := map[results.Outcome]int{}
	for i := range all {
		r := &all[i]
		counts[r.Outcome]++
		code, message := present.CodeAndMessage(r)
		fmt.Fprintf(tw, "%s\t", present.Printable(r.Probe))
		if withTool {
			fmt.Fprintf(tw, "%s\t", mcpToolText(r.MCP))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Outcome, code,
			r.AttemptCount(), present.FormatLatency(r.Duration), present.StatusText(r.HTTPStatus), message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	parts := make([]string, 0, len(results.Outcomes))
	for _, o := range results.Outcomes {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	_, err := fmt.Fprintf(w, "\n%d probes: %s\n", len(all), strings.Join(parts, ", "))
	return err
}

// mcpToolText is how a table names an MCP probe's tool: the tool at its
// server's host and path; "-" for an HTTP probe.
func mcpToolText(t *results.MCPTarget) string {
	if t == nil {
		return "-"
	}
	server := t.Server
	if _, rest, ok := strings.Cut(server, "://"); ok {
		server = rest
	}
	return present.Printable(t.Tool + " @ " + server)
}

// csvCell is a text cell of CSV output made inert for a spreadsheet: a
// cell that starts with =, +, -, @, a tab or a carriage return would be
// read as a formula (OWASP's "CSV injection"), so it gets a leading
// single quote, which spreadsheets show as text. Only text cells that can
// carry what a provider, a rule or a config wrote pass through here;
// numbers and timestamps are written as they are. Otherwise CSV keeps the
// text whole, escape sequences included, as JSON does.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
