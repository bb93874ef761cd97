package main

import (
	"bufio"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything the read mode measured; --json writes it as is.
type report struct {
	benchHeader
	// SQLiteShell is the version of the sqlite3 shell, which generated the
	// database and explained the plans; ToolpulseSQLite is the driver
	// module toolpulse links, whose SQLite may plan differently.
	SQLiteShell     string       `json:"sqlite3_shell_version"`
	ToolpulseSQLite string       `json:"toolpulse_sqlite_driver"`
	Database        databaseInfo `json:"database"`
	Repeat          int          `json:"repeat"`
	WarmUp          string       `json:"warm_up"`
	HistoryProbe    string       `json:"history_probe"`
	Timings         []timing     `json:"timings"`
	Plans           []plan       `json:"plans"`
}

// benchHeader opens every report, whatever its mode: which mode ran, when,
// and on what. Embedded, its fields are the report's own in JSON.
type benchHeader struct {
	Mode      string    `json:"mode"`
	StartedAt time.Time `json:"started_at"`
	Machine   machine   `json:"machine"`
	GoVersion string    `json:"go_version"`
	NumCPU    int       `json:"num_cpu"`
}

// newBenchHeader describes this machine for a report of mode, started now.
func newBenchHeader(mode string) benchHeader {
	host, _ := os.Hostname()
	return benchHeader{
		Mode:      mode,
		StartedAt: time.Now().UTC().Truncate(time.Second),
		Machine:   machine{Hostname: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUModel: cpuModel()},
		GoVersion: runtime.Version(),
		NumCPU:    runtime.NumCPU(),
	}
}

// writeLines prints the header's lines of a report table.
func (h benchHeader) writeLines(tw io.Writer) {
	fmt.Fprintf(tw, "toolpulse-bench %s\t%s\n", h.Mode, h.StartedAt.Format(time.RFC3339))
	fmt.Fprintf(tw, "machine\t%s, %s/%s, %s, %d CPUs, %s\n",
		h.Machine.Hostname, h.Machine.OS, h.Machine.Arch, orUnknown(h.Machine.CPUModel), h.NumCPU, h.GoVersion)
}

type machine struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUModel string `json:"cpu_model"`
}

type databaseInfo struct {
	Path      string `json:"path"`
	Rows      int64  `json:"rows"`
	Attempts  int64  `json:"attempts"`
	SizeBytes int64  `json:"size_bytes"`
	// Probes are the probes with results; the JSON has their number.
	Probes         []string `json:"-"`
	ProbeCount     int      `json:"probes"`
	Days           int      `json:"days"` // 0 when reused
	FirstStartedAt string   `json:"first_started_at"`
	LastStartedAt  string   `json:"last_started_at"`
	Reused         bool     `json:"reused"`
	GenerationMS   float64  `json:"generation_ms"` // 0 when reused
}

// timing is one measurement over Runs runs. An n/a measurement (a route
// this toolpulse does not serve) has no runs and null times.
type timing struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"` // process, in-process, http or startup
	Runs     int      `json:"runs"`
	MinMS    *float64 `json:"min_ms"`
	MedianMS *float64 `json:"median_ms"`
	MaxMS    *float64 `json:"max_ms"`
	Note     string   `json:"note"`
}

// plan is the query plan of one query, as the sqlite3 shell prints it.
type plan struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
	Plan string `json:"plan"`
}

const warmUpNote = "each measurement runs once untimed before its timed runs, so a migration " +
	"that the first open of a database might apply, and cold caches, are not timed"

func newReport(opts readOptions, shell string) *report {
	return &report{
		benchHeader: newBenchHeader("read"),
		SQLiteShell: shell,
		Repeat:      opts.repeat,
		WarmUp:      warmUpNote,
		Timings:     []timing{},
		Plans:       []plan{},
	}
}

// cpuModel is the CPU's model name where /proc/cpuinfo tells it, else "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// linkedSQLite names the SQLite driver module bin was built with, or
// "unknown".
func linkedSQLite(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == "github.com/mattn/go-sqlite3" {
			return dep.Path + " " + dep.Version
		}
	}
	return "unknown"
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

func writeJSONFile(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// writeTable prints the report for a person: the set-up, the timings as an
// aligned table, then the plans.
func writeTable(w io.Writer, rep *report) error {
	db := rep.Database
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	rep.benchHeader.writeLines(tw)
	fmt.Fprintf(tw, "sqlite\tsqlite3 shell %s (generation, plans); toolpulse links %s\n", rep.SQLiteShell, rep.ToolpulseSQLite)
	fmt.Fprintf(tw, "database\t%s\n", db.Path)
	fmt.Fprintf(tw, "  results\t%s results, %s attempts, %s probes\n", commas(db.Rows), commas(db.Attempts), commas(int64(len(db.Probes))))
	fmt.Fprintf(tw, "  started\t%s to %s\n", db.FirstStartedAt, db.LastStartedAt)
	fmt.Fprintf(tw, "  size\t%s (%s bytes)\n", humanBytes(db.SizeBytes), commas(db.SizeBytes))
	if db.Reused {
		fmt.Fprintf(tw, "  generated\tno: reused as it was\n")
	} else {
		fmt.Fprintf(tw, "  generated in\t%s\n", time.Duration(db.GenerationMS*float64(time.Millisecond)).Round(100*time.Millisecond))
	}
	fmt.Fprintf(tw, "timing\t%d runs per measurement, after one untimed warm-up run that also absorbs any pending migration\n", rep.Repeat)
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "measurement\tkind\t%4s\t%9s\t%9s\t%9s\tnote\n", "runs", "min ms", "median ms", "max ms")
	for _, t := range rep.Timings {
		fmt.Fprintf(tw, "%s\t%s\t%4d\t%9s\t%9s\t%9s\t%s\n",
			t.Name, t.Kind, t.Runs, fmtMS(t.MinMS), fmtMS(t.MedianMS), fmtMS(t.MaxMS), t.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	for _, p := range rep.Plans {
		fmt.Fprintf(w, "\n%s\n%s\n", p.Name, p.Plan)
	}
	return nil
}

func fmtMS(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", *v)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown CPU"
	}
	return s
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), "KMGTPE"
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.2f %ciB", v, suffix[i])
}
