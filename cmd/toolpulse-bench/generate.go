package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

//go:embed fill.sql
var fillTemplate string

const (
	// fillChunk is how many results one INSERT writes: progress is shown
	// after each.
	fillChunk = 1_000_000
	// fillCacheKiB is the page cache while filling; it also bounds the
	// memory the sorts of CREATE INDEX and GROUP BY use before they spill
	// to temporary files.
	fillCacheKiB = 1 << 20
	// maxResults keeps every intermediate product of the fill within
	// SQLite's 64-bit integers, which turn into floats on overflow.
	maxResults = 1_000_000_000
)

// dataSpec is the database to generate.
type dataSpec struct {
	Results int
	Probes  int
	Days    int
}

func (d dataSpec) validate() error {
	switch {
	case d.Probes < 1:
		return fmt.Errorf("--probes must be at least 1, got %d", d.Probes)
	case d.Days < 1:
		return fmt.Errorf("--days must be at least 1, got %d", d.Days)
	case d.Results > maxResults:
		return fmt.Errorf("--results must be at most %d, got %d", maxResults, d.Results)
	case d.Results < 10*d.Probes:
		// Fewer runs per probe leave no room for its drifts.
		return fmt.Errorf("--results must be at least 10 per probe (%d), got %d", 10*d.Probes, d.Results)
	}
	return nil
}

// nameWidth is how many digits the names of n probes have: probe-0001 and
// up, wide enough that the names sort in number order.
func nameWidth(n int) int { return max(4, len(strconv.Itoa(n))) }

// generate creates the database at path, which must not exist, and fills
// it as spec says with runs up to now. A failed fill removes the file.
func generate(ctx context.Context, path string, spec dataSpec, now time.Time, prog *progress) (err error) {
	prog.printf("generating %s results for %s probes over %d days into %s",
		commas(int64(spec.Results)), commas(int64(spec.Probes)), spec.Days, path)
	defer func() {
		if err != nil {
			removeDatabase(path)
		}
	}()
	if err := createSchema(ctx, path); err != nil {
		return err
	}
	plan, err := newFillPlan(ctx, path, spec, now)
	if err != nil {
		return err
	}
	script, err := plan.render()
	if err != nil {
		return err
	}
	if err := runScript(ctx, path, script, prog); err != nil {
		return fmt.Errorf("fill %s: %w", path, err)
	}
	return nil
}

// createSchema has toolpulse's store create the file and run every
// migration, so that the schema is exactly the one toolpulse uses.
func createSchema(ctx context.Context, path string) error {
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("create the schema: %w", err)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("create the schema: %w", err)
	}
	return nil
}

// removeDatabase removes a database file with its WAL and shared-memory
// files.
func removeDatabase(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		_ = os.Remove(path + suffix)
	}
}

// index is a secondary index as SQLite stores it.
type index struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// resultIndexes returns the indexes of results that a statement created
// (not those behind UNIQUE), in the order they were created.
func resultIndexes(ctx context.Context, path string) ([]index, error) {
	out, err := querySQLite(ctx, path, []string{"-json"},
		`SELECT name, sql FROM sqlite_master
WHERE type = 'index' AND tbl_name = 'results' AND sql IS NOT NULL
ORDER BY rowid;`)
	if err != nil {
		return nil, fmt.Errorf("read the indexes of results: %w", err)
	}
	var idx []index
	if strings.TrimSpace(out) == "" {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(out), &idx); err != nil {
		return nil, fmt.Errorf("read the indexes of results: %w", err)
	}
	return idx, nil
}

// fillPlan is what fill.sql is executed with. Its methods write the SQL
// expressions that the results and their attempts must compute alike.
type fillPlan struct {
	Results   int64
	Probes    int64
	NameWidth int
	// Positions is the number of slots of every probe, times the number
	// of probes: position i starts at StartMS + i * SpanMS / Positions, so
	// each probe runs at an even interval and the last run is before now.
	Positions   int64
	StartMS     int64
	SpanMS      int64
	Now         string
	CacheKiB    int
	Kinds       []kindRow
	Shapes      []benchShape
	Baseline    string
	DriftSlots  []driftSlot
	DriftSpread int64
	Indexes     []index
	Chunks      []chunk
	Consumer    results.ConsumerRef
	// Rollups fill the rollup tables from the results, see
	// sqlite.RollupStatements.
	Rollups []string
}

// driftSlot is a slot at which every probe's run (shifted per probe, see
// DriftSpread) is of a kind whose shape differs from the baseline.
type driftSlot struct {
	Slot int64
	Kind int
}

// chunk is the positions [Lo, Hi) written by one INSERT.
type chunk struct {
	Lo, Hi int64
	Plan   *fillPlan
}

func newFillPlan(ctx context.Context, path string, spec dataSpec, now time.Time) (*fillPlan, error) {
	consumer, err := benchConsumer()
	if err != nil {
		return nil, err
	}
	shapes, err := benchShapes()
	if err != nil {
		return nil, err
	}
	idx, err := resultIndexes(ctx, path)
	if err != nil {
		return nil, err
	}
	rollups, err := sqlite.RollupStatements()
	if err != nil {
		return nil, err
	}
	n, probes := int64(spec.Results), int64(spec.Probes)
	slots := (n + probes - 1) / probes
	end := now.Truncate(time.Millisecond)
	span := int64(spec.Days) * 24 * time.Hour.Milliseconds()
	if slots*probes > math.MaxInt64/span {
		return nil, fmt.Errorf("%d results over %d days: too many to place in time", n, spec.Days)
	}
	p := &fillPlan{
		Results:   n,
		Probes:    probes,
		NameWidth: nameWidth(spec.Probes),
		Positions: slots * probes,
		StartMS:   end.UnixMilli() - span,
		SpanMS:    span,
		Now:       results.FormatTime(end),
		CacheKiB:  fillCacheKiB,
		Shapes:    shapes,
		Baseline:  shapes[shapeList].Fingerprint,
		Indexes:   idx,
		Consumer:  consumer.Ref(),
		Rollups:   rollups,
	}
	for _, k := range kinds() {
		p.Kinds = append(p.Kinds, newKindRow(k, shapes))
	}
	// Every probe has at least full = n / probes slots. Its drifts fall at
	// a sixth, a half and five sixths of them, shifted per probe by up to
	// DriftSpread - 1 so that probes do not all drift at the same moment.
	full := n / probes
	p.DriftSpread = max(1, min(7, full/6))
	p.DriftSlots = []driftSlot{
		{Slot: full / 6, Kind: kindPassItems},
		{Slot: full / 2, Kind: kindWrongType},
		{Slot: 5 * full / 6, Kind: kindMissingField},
	}
	for lo := int64(0); lo < n; lo += fillChunk {
		p.Chunks = append(p.Chunks, chunk{Lo: lo, Hi: min(lo+fillChunk, n), Plan: p})
	}
	return p, nil
}

func (p *fillPlan) render() ([]byte, error) {
	t, err := template.New("fill.sql").Funcs(template.FuncMap{
		"sql":    sqlText,
		"commas": commas,
	}).Parse(fillTemplate)
	if err != nil {
		return nil, fmt.Errorf("fill.sql: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("fill.sql: %w", err)
	}
	return b.Bytes(), nil
}

// MS is the start of the run at position pos, in Unix milliseconds.
func (p *fillPlan) MS(pos any) string {
	return fmt.Sprintf("(%d + (%v) * %d / %d)", p.StartMS, pos, p.SpanMS, p.Positions)
}

// Hash is a pseudo-random number in [0, 2^31 - 1) for position pos: two
// rounds of a quadratic map modulo a prime, which stays within 64 bits.
// The fill draws everything random from it, so that a row's values can be
// computed again from its position.
func (p *fillPlan) Hash(pos any) string {
	lin := fmt.Sprintf("((%v) * 1103515245 + 12345) %% 2147483647", pos)
	return fmt.Sprintf("(((%s) * (%s) + 7) %% 2147483647)", lin, lin)
}

// Time is the stored form (results.TimeLayout) of a Unix millisecond.
func (p *fillPlan) Time(ms string) string {
	return fmt.Sprintf("(strftime('%%Y-%%m-%%dT%%H:%%M:%%S', (%s) / 1000, 'unixepoch') || printf('.%%03dZ', (%s) %% 1000))", ms, ms)
}

// DrawnMS is the duration of an attempt that got an answer: 20 to 399 ms,
// most of them short (the square of a uniform draw).
func (p *fillPlan) DrawnMS(h string) string {
	u := fmt.Sprintf("((%s) * 48271 %% 2147483647 %% 1000)", h)
	return fmt.Sprintf("(20 + 380 * %s * %s / 1000000)", u, u)
}

// FailedMS is the duration of a quick failed attempt: 20 to 199 ms.
func (p *fillPlan) FailedMS(h string) string {
	return fmt.Sprintf("(20 + (%s) / 7 %% 180)", h)
}

// WaitMS is the back-off before a retry: 50 to 499 ms.
func (p *fillPlan) WaitMS(h string) string {
	return fmt.Sprintf("(50 + (%s) / 1301 %% 450)", h)
}

// KindOf picks the kind of the run at position pos with hash h: the drift
// kinds at the probe's drift slots, elsewhere the mix of outcomes.
func (p *fillPlan) KindOf(pos, h string) string {
	var b strings.Builder
	b.WriteString("(CASE")
	for _, d := range p.DriftSlots {
		fmt.Fprintf(&b, "\n        WHEN (%s) / %d = %d + (%s) %% %d %% %d THEN %d",
			pos, p.Probes, d.Slot, pos, p.Probes, p.DriftSpread, d.Kind)
	}
	fmt.Fprintf(&b, "\n        WHEN (%s) %% 10000 < %d THEN CASE WHEN (%s) / 10000 %% 100 < %d THEN %d ELSE %d END",
		h, passBelow, h, retriedPassPercent, kindPassRetried, kindPass)
	fmt.Fprintf(&b, "\n        WHEN (%s) %% 10000 < %d THEN CASE (%s) / 10000 %% 3 WHEN 0 THEN %d WHEN 1 THEN %d ELSE %d END",
		h, contractBelow, h, kindEmptySelection, kindMissingField, kindWrongType)
	fmt.Fprintf(&b, "\n        ELSE CASE (%s) / 10000 %% 2 WHEN 0 THEN %d ELSE %d END\n    END)",
		h, kindTimeout, kindServerError)
	return b.String()
}

// kindRow is a kind as SQL literals, for the bench_kinds table.
type kindRow struct {
	ID, Attempts                                  int
	Outcome, Code, Message, Retryable, HTTPStatus string
	Selected, Fingerprint, Sample, TimeoutMS      string
	FailedStatus, FailedCode, FailedMessage       string
	LastCode, LastMessage                         string
}

func newKindRow(k kind, shapes []benchShape) kindRow {
	r := kindRow{
		ID:            k.ID,
		Attempts:      k.Attempts,
		Outcome:       sqlText(string(k.Outcome)),
		Code:          sqlText(string(k.Code)),
		Message:       sqlText(k.Message),
		Retryable:     sqlBool(k.Code != "" && k.Code.Retryable()),
		HTTPStatus:    sqlInt(k.HTTPStatus),
		Selected:      strconv.Itoa(k.Selected),
		Fingerprint:   "NULL",
		Sample:        sqlText(k.Sample),
		TimeoutMS:     "NULL",
		FailedStatus:  sqlInt(k.Failed.HTTPStatus),
		FailedCode:    sqlText(string(k.Failed.Code)),
		FailedMessage: sqlText(k.Failed.Message),
		LastCode:      "NULL",
		LastMessage:   "NULL",
	}
	if k.Shape >= 0 {
		r.Fingerprint = sqlText(shapes[k.Shape].Fingerprint)
	}
	if k.TimedOut {
		r.TimeoutMS = strconv.Itoa(timeoutMS)
	}
	// The last attempt of an unavailable run failed as the run did; that
	// of a contract_error was a usable exchange, so it carries no code.
	if k.Outcome == results.Unavailable {
		r.LastCode, r.LastMessage = r.Code, r.Message
	}
	return r
}

// sqlText is s as an SQL string literal, or NULL when s is empty.
func sqlText(s string) string {
	if s == "" {
		return "NULL"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// sqlInt is n as an SQL literal, or NULL when n is 0.
func sqlInt(n int) string {
	if n == 0 {
		return "NULL"
	}
	return strconv.Itoa(n)
}

func sqlBool(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
