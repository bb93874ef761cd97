package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

type historyCmd struct {
	Probe    []string `placeholder:"NAME" help:"Only this probe (repeatable)."`
	Since    string   `placeholder:"WHEN" help:"Runs started at or after: a duration ago (24h) or an RFC 3339 time or date."`
	Until    string   `placeholder:"WHEN" help:"Runs started before: a duration ago or an RFC 3339 time or date."`
	Outcome  []string `placeholder:"O" help:"Only this outcome: pass, contract_error or unavailable (repeatable)."`
	Code     []string `placeholder:"CODE" help:"Only this code (repeatable)."`
	Kind     []string `placeholder:"KIND" help:"Only probes of this kind: http, mcp or steps (repeatable)."`
	Location []string `placeholder:"L" help:"Only runs from this location, its fleet.location (repeatable)."`
	Limit    int      `default:"50" help:"At most this many runs, newest first."`
	Format   string   `enum:"table,json,csv" default:"table" help:"Output: table, json (one object per line) or csv."`
	Attempts bool     `help:"Show every attempt of the listed runs."`
}

// Run prints recorded results, newest first.
func (h *historyCmd) Run(e *env, root *cli) error {
	now := time.Now()
	q := results.HistoryQuery{Probes: h.Probe, Limit: h.Limit}
	var err error
	if q.Since, err = present.ParseInstant(h.Since, now); err != nil {
		return usageError("--since: %v", err)
	}
	if q.Until, err = present.ParseInstant(h.Until, now); err != nil {
		return usageError("--until: %v", err)
	}
	for _, o := range h.Outcome {
		outcome, err := results.ParseOutcome(o)
		if err != nil {
			return usageError("--outcome: %v", err)
		}
		q.Outcomes = append(q.Outcomes, outcome)
	}
	for _, c := range h.Code {
		q.Codes = append(q.Codes, results.Code(c))
	}
	for _, k := range h.Kind {
		kind, err := results.ParseProbeKind(k)
		if err != nil {
			return usageError("--kind: %v", err)
		}
		q.Kinds = append(q.Kinds, kind)
	}
	for _, l := range h.Location {
		if !checks.ValidLocation(l) {
			return usageError("--location: %q is not a location name (lower-case letters, digits and -)", l)
		}
		q.Locations = append(q.Locations, l)
	}
	store, cfg, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := knownProbes(e.ctx, store, cfg, h.Probe); err != nil {
		return err
	}
	rows, err := store.History(e.ctx, q)
	if err != nil {
		return softwareError(err)
	}
	switch h.Format {
	case "json":
		err = writeHistoryJSON(e.stdout, rows, h.Attempts)
	case "csv":
		err = writeHistoryCSV(e.stdout, rows)
	default:
		err = writeHistoryTable(e.stdout, rows, h.Attempts, useColour(e))
	}
	if err != nil {
		return softwareError(err)
	}
	return nil
}

// openStoreForReading opens the store the config (or --db) names, which
// must exist (storeRead). The config is nil when --db named the store and
// the config did not load: reading a store needs no config.
func openStoreForReading(ctx context.Context, root *cli, e *env) (store, *checks.Config, error) {
	var cfg *checks.Config
	var storage checks.Storage
	if root.DB == "" {
		var err error
		if cfg, err = root.loadConfig(e); err != nil {
			return nil, nil, err
		}
		storage = cfg.Storage
	} else {
		if c, err := root.loadConfig(e); err == nil {
			cfg = c
		}
		storage = dbStorage(root.DB, checks.Storage{})
	}
	s, err := openStore(ctx, storage, storeRead)
	if err != nil {
		return nil, nil, err
	}
	return s, cfg, nil
}

// knownProbes refuses a --probe that names neither a configured probe nor
// one with recorded results: an empty history for a misspelt name would
// read as "no runs".
func knownProbes(ctx context.Context, store store, cfg *checks.Config, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var known []string
	if cfg != nil {
		known = probeNames(cfg)
	}
	latest, err := store.Latest(ctx)
	if err != nil {
		return softwareError(err)
	}
	for _, r := range latest {
		if !slices.Contains(known, r.Probe) {
			known = append(known, r.Probe)
		}
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return unknownProbe(n, known)
		}
	}
	return nil
}

// historyRow is the JSON and CSV form of a stored result: the columns of
// the results table, with the same names.
type historyRow struct {
	OperationID      string          `json:"operation_id"`
	Probe            string          `json:"probe"`
	StartedAt        string          `json:"started_at"`
	DurationMS       int64           `json:"duration_ms"`
	Outcome          results.Outcome `json:"outcome"`
	Code             *string         `json:"code"`
	Message          *string         `json:"message"`
	Retryable        bool            `json:"retryable"`
	Attempts         int             `json:"attempts"`
	HTTPStatus       *int            `json:"http_status"`
	SelectedCount    int             `json:"selected_count"`
	ValidatedCount   int             `json:"validated_count"`
	ShapeFingerprint *string         `json:"shape_fingerprint"`
	Consumer         string          `json:"consumer"`
	ConsumerVersion  string          `json:"consumer_version"`
	RuleHash         string          `json:"rule_hash"`
	ResponseSample   *string         `json:"response_sample"`
	ShapeBaseline    *string         `json:"shape_baseline"`
	ShapeDrift       *string         `json:"shape_drift"`
	Kind             string          `json:"kind"`
	MCPTool          *string         `json:"mcp_tool"`
	MCPServer        *string         `json:"mcp_server"`
	ToolFingerprint  *string         `json:"tool_fingerprint"`
	// Step is a steps probe's deciding step: null when every step
	// passed, and for a single probe.
	Step *string `json:"step"`
	// Location is where the run ran from (SPEC §13): default for a
	// single instance that names none.
	Location string `json:"location"`
	// TraceID is the W3C trace id the run's requests carried (SPEC
	// §10.1); null for an untraced run.
	TraceID     *string          `json:"trace_id"`
	AttemptList []attemptRowJSON `json:"attempt_list,omitempty"`
	// Steps are a steps probe's run_steps rows; absent for a single probe.
	Steps []stepRowJSON `json:"steps,omitempty"`
}

// stepRowJSON is a run_steps row as history prints it.
type stepRowJSON struct {
	Step             string          `json:"step"`
	Outcome          results.Outcome `json:"outcome"`
	Code             *string         `json:"code"`
	Message          *string         `json:"message"`
	StartedAt        string          `json:"started_at"`
	DurationMS       int64           `json:"duration_ms"`
	Polls            int             `json:"polls"`
	Always           bool            `json:"always"`
	Skipped          bool            `json:"skipped"`
	ShapeFingerprint *string         `json:"shape_fingerprint"`
}

type attemptRowJSON struct {
	Number int `json:"number"`
	// Try is the try of the retry loop the row belongs to, counted per
	// call (per step, and per poll of a verification); Poll the poll of a
	// verification, null for a call that does not poll; Method the
	// JSON-RPC method of an MCP exchange, null for an HTTP attempt.
	Try        int     `json:"try"`
	Poll       *int    `json:"poll"`
	Method     *string `json:"method"`
	StartedAt  string  `json:"started_at"`
	DurationMS int64   `json:"duration_ms"`
	HTTPStatus *int    `json:"http_status"`
	Code       *string `json:"code"`
	Message    *string `json:"message"`
	WaitMS     int64   `json:"wait_ms"`
	// Step is the step of a steps probe the attempt belongs to; null for
	// a single probe.
	Step *string `json:"step"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func toHistoryRow(r *results.Result, withAttempts bool) historyRow {
	row := historyRow{
		OperationID: r.OperationID, Probe: r.Probe, StartedAt: results.FormatTime(r.StartedAt),
		DurationMS: r.Duration.Milliseconds(), Outcome: r.Outcome, Attempts: r.AttemptCount(),
		HTTPStatus: optInt(r.HTTPStatus), SelectedCount: r.SelectedCount, ValidatedCount: r.ValidatedCount,
		Consumer: r.Consumer.Name, ConsumerVersion: r.Consumer.Version, RuleHash: r.Consumer.RuleHash,
		Kind: string(r.EffectiveKind()), Step: optString(r.Step), Location: r.RanFrom(), TraceID: optString(r.TraceID),
	}
	for _, st := range r.Steps {
		sr := stepRowJSON{Step: st.Name, Outcome: st.Outcome, StartedAt: results.FormatTime(st.StartedAt),
			DurationMS: st.Duration.Milliseconds(), Polls: st.Polls, Always: st.Always, Skipped: st.Skipped}
		if st.Error != nil {
			sr.Code, sr.Message = optString(string(st.Error.Code)), optString(st.Error.Message)
		}
		if st.Shape != nil {
			sr.ShapeFingerprint = optString(st.Shape.Fingerprint)
		}
		row.Steps = append(row.Steps, sr)
	}
	if r.MCP != nil {
		row.MCPTool, row.MCPServer = &r.MCP.Tool, &r.MCP.Server
	}
	if r.Error != nil {
		row.Code, row.Message, row.Retryable = optString(string(r.Error.Code)), optString(r.Error.Message), r.Error.Retryable
		row.ResponseSample = &r.ResponseSample
	}
	if r.Shape != nil {
		row.ShapeFingerprint = optString(r.Shape.Fingerprint)
		if len(r.Shape.Drift) > 0 {
			// As the column stores them: one line per changed path.
			row.ShapeBaseline, row.ShapeDrift = optString(r.Shape.Baseline), optString(strings.Join(r.Shape.Drift, "\n"))
		}
	}
	if r.Tool != nil {
		row.ToolFingerprint = optString(r.Tool.Fingerprint)
	}
	if withAttempts {
		for _, a := range r.Attempts {
			row.AttemptList = append(row.AttemptList, attemptRowJSON{
				Number: a.Number, Try: a.TryNumber(), Poll: optInt(a.Poll), Method: optString(a.Method),
				StartedAt: results.FormatTime(a.StartedAt), DurationMS: a.Duration.Milliseconds(),
				HTTPStatus: optInt(a.HTTPStatus), Code: optString(string(a.Code)), Message: optString(a.Message),
				WaitMS: a.Wait.Milliseconds(), Step: optString(a.Step),
			})
		}
	}
	return row
}

func writeHistoryJSON(w io.Writer, rows []results.Result, withAttempts bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rows {
		if err := enc.Encode(toHistoryRow(&rows[i], withAttempts)); err != nil {
			return err
		}
	}
	return nil
}

var historyColumns = []string{"operation_id", "probe", "started_at", "duration_ms", "outcome", "code", "message",
	"retryable", "attempts", "http_status", "selected_count", "validated_count", "shape_fingerprint",
	"consumer", "consumer_version", "rule_hash", "response_sample", "shape_baseline", "shape_drift",
	"kind", "mcp_tool", "mcp_server", "step", "location", "trace_id"}

func writeHistoryCSV(w io.Writer, rows []results.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(historyColumns); err != nil {
		return err
	}
	// Every text cell but the outcome and the timestamp passes csvCell:
	// a message, a sample or a shape is the provider's text, and a code,
	// a step or a tool a rule's or a config's.
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return csvCell(*s)
	}
	for i := range rows {
		r := toHistoryRow(&rows[i], false)
		status := ""
		if r.HTTPStatus != nil {
			status = strconv.Itoa(*r.HTTPStatus)
		}
		if err := cw.Write([]string{csvCell(r.OperationID), csvCell(r.Probe), r.StartedAt, strconv.FormatInt(r.DurationMS, 10),
			string(r.Outcome), deref(r.Code), deref(r.Message), strconv.FormatBool(r.Retryable),
			strconv.Itoa(r.Attempts), status, strconv.Itoa(r.SelectedCount), strconv.Itoa(r.ValidatedCount),
			deref(r.ShapeFingerprint), csvCell(r.Consumer), csvCell(r.ConsumerVersion), csvCell(r.RuleHash), deref(r.ResponseSample),
			deref(r.ShapeBaseline), deref(r.ShapeDrift), csvCell(r.Kind), deref(r.MCPTool), deref(r.MCPServer), deref(r.Step), csvCell(r.Location), deref(r.TraceID)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeHistoryTable(w io.Writer, rows []results.Result, withAttempts, colour bool) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no recorded runs match")
		return err
	}
	// A TOOL column only when an MCP probe is listed: an HTTP-only
	// history reads as it always did.
	withTool := slices.ContainsFunc(rows, func(r results.Result) bool { return r.MCP != nil })
	tool := func(r *results.Result) string {
		if !withTool {
			return ""
		}
		return mcpToolText(r.MCP) + "\t"
	}
	toolHeader, toolGap := "", ""
	if withTool {
		toolHeader, toolGap = "TOOL\t", "\t"
	}
	// A STEP column, the deciding step, only when a steps probe is
	// listed; an attempt row shows its own step there.
	withStep := slices.ContainsFunc(rows, func(r results.Result) bool { return r.EffectiveKind() == results.ProbeSteps })
	step := func(name string) string {
		if !withStep {
			return ""
		}
		if name == "" {
			name = "-"
		}
		return present.Printable(name) + "\t"
	}
	stepHeader := ""
	if withStep {
		stepHeader = "STEP\t"
	}
	// A LOCATION column only when the runs listed come from more than one
	// location: a single instance's history reads as it always did.
	withLocation := slices.ContainsFunc(rows, func(r results.Result) bool { return r.Location != rows[0].Location })
	location := func(r *results.Result) string {
		if !withLocation {
			return ""
		}
		return r.RanFrom() + "\t"
	}
	locationHeader, locationGap := "", ""
	if withLocation {
		locationHeader, locationGap = "LOCATION\t", "\t"
	}
	// A TRACE column, the provider's trace to look the run up by, only
	// when a run listed was traced (SPEC §10.1).
	withTrace := slices.ContainsFunc(rows, func(r results.Result) bool { return r.TraceID != "" })
	trace := func(r *results.Result) string {
		if !withTrace {
			return ""
		}
		return cmp.Or(r.TraceID, "-") + "\t"
	}
	traceHeader, traceGap := "", ""
	if withTrace {
		traceHeader, traceGap = "TRACE\t", "\t"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "STARTED\tPROBE\t%s%s%s%s\tCODE\tATTEMPTS\tLATENCY\tHTTP\t%sMESSAGE\n", locationHeader, toolHeader, stepHeader, paint("OUTCOME", "", colour), traceHeader)
	for i := range rows {
		r := &rows[i]
		code, message := present.CodeAndMessage(r)
		fmt.Fprintf(tw, "%s\t%s\t%s%s%s%s\t%s\t%d\t%s\t%s\t%s%s\n", results.FormatTime(r.StartedAt), present.Printable(r.Probe), location(r), tool(r), step(r.Step),
			paint(string(r.Outcome), r.Outcome, colour), code, r.AttemptCount(), present.FormatLatency(r.Duration),
			present.StatusText(r.HTTPStatus), trace(r), message)
		if withAttempts {
			for _, a := range r.Attempts {
				acode := present.Printable(a.Verdict())
				detail := results.Shorten(present.Printable(a.Message), present.MaxMessageRunes)
				if a.Wait > 0 {
					detail = strings.TrimSpace(detail + " (then waited " + present.FormatLatency(a.Wait) + ")")
				}
				fmt.Fprintf(tw, "  %s\t\t%s%s%s\t%s\t\t%s\t%s\t%s%s\n", present.Printable(attemptLabel(a)), locationGap, toolGap, step(a.Step), acode, present.FormatLatency(a.Duration),
					present.StatusText(a.HTTPStatus), traceGap, detail)
			}
		}
	}
	return tw.Flush()
}

// attemptLabel names an attempt row in a table: "attempt 2" for an HTTP
// probe's, "try 1 tools/call" for an exchange of an MCP session, and
// "poll 3 try 1" for a try of a verification's poll, so that a poll does
// not read as a retry.
func attemptLabel(a results.Attempt) string {
	switch {
	case a.Method != "" && a.Poll > 0:
		return fmt.Sprintf("poll %d try %d %s", a.Poll, a.TryNumber(), a.Method)
	case a.Method != "":
		return fmt.Sprintf("try %d %s", a.TryNumber(), a.Method)
	case a.Poll > 0:
		return fmt.Sprintf("poll %d try %d", a.Poll, a.TryNumber())
	}
	return fmt.Sprintf("attempt %d", a.Number)
}
