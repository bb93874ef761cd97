package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// testReport is everything `toolpulse test` found; --format json prints it
// as is.
type testReport struct {
	OK        bool             `json:"ok"`
	Consumers []consumerReport `json:"consumers"`
	// Probes are the multi-step probes, whose canned runs are judged as
	// a whole (SPEC §11); only when no --consumer is named.
	Probes []probeReport `json:"probes,omitempty"`
	// Unused names the config's consumers no probe uses: not tested unless
	// named with --consumer.
	Unused []string `json:"unused_consumers,omitempty"`
}

// probeReport is one multi-step probe's canned runs and, with --mutate,
// the mutations of its steps' answers that the probe would miss.
type probeReport struct {
	Name     string          `json:"name"`
	Steps    []string        `json:"steps"`
	OK       bool            `json:"ok"`
	Fixtures []fixtureReport `json:"fixtures"`
	Mutation *mutationReport `json:"mutation,omitempty"`
}

type consumerReport struct {
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	RuleHash string          `json:"rule_hash"`
	Source   string          `json:"source"`
	Probes   []string        `json:"probes"`
	OK       bool            `json:"ok"`
	Fixtures []fixtureReport `json:"fixtures"`
	Mutation *mutationReport `json:"mutation,omitempty"`
}

type fixtureReport struct {
	Name      string          `json:"name"`
	Expected  string          `json:"expected"`
	Outcome   results.Outcome `json:"outcome"`
	Code      results.Code    `json:"code,omitempty"`
	Step      string          `json:"step,omitempty"` // a multi-step probe's deciding step
	Message   string          `json:"message,omitempty"`
	Selected  int             `json:"selected"`
	Validated int             `json:"validated"`
	OK        bool            `json:"ok"`
	Mismatch  string          `json:"mismatch,omitempty"`
	Duration  time.Duration   `json:"-"`
}

// got is the verdict as a table shows it.
func (f *fixtureReport) got() string {
	if f.Outcome == results.Pass {
		return fmt.Sprintf("pass (%d selected)", f.Selected)
	}
	got := string(f.Outcome) + " " + string(f.Code)
	if f.Step != "" {
		got += " at step " + f.Step
	}
	return got
}

// mutationReport is a consumer's mutation analysis with how long it took.
type mutationReport struct {
	consumers.MutationReport
	Duration time.Duration
	// Stale names accept_mutations entries that matched no survivor.
	Stale []string
}

func (m *mutationReport) MarshalJSON() ([]byte, error) {
	type survivor struct {
		Base     string   `json:"base"`
		Mutation string   `json:"mutation"`
		Kind     string   `json:"kind"`
		Path     string   `json:"path"`
		Class    string   `json:"class"`
		Diff     []string `json:"diff"`
		Why      string   `json:"why"`
		Accepted string   `json:"accepted,omitempty"`
	}
	out := struct {
		Bases          []string          `json:"bases"`
		Skipped        map[string]string `json:"skipped,omitempty"`
		Total          int               `json:"total"`
		Killed         int               `json:"killed"`
		Score          float64           `json:"score"`
		OK             bool              `json:"ok"`
		Survivors      []survivor        `json:"survivors"`
		KilledControls []string          `json:"killed_controls,omitempty"`
		StaleAccepts   []string          `json:"stale_accepts,omitempty"`
	}{StaleAccepts: m.Stale, Bases: m.Bases, Skipped: m.Skipped, Total: m.Total, Killed: m.Killed, Score: m.Score(), OK: !m.Failed(),
		Survivors: []survivor{}, KilledControls: m.KilledControls}
	if out.Bases == nil {
		out.Bases = []string{}
	}
	for _, s := range m.Survivors {
		out.Survivors = append(out.Survivors, survivor{Base: s.Base, Mutation: s.Mutation.Name, Kind: string(s.Mutation.Kind),
			Path: s.Mutation.Path, Class: string(s.Class), Diff: s.Diff, Why: s.Why, Accepted: s.Accepted})
	}
	return json.Marshal(out)
}

func writeTestJSON(w io.Writer, r *testReport) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// writeTestTable prints each consumer's fixtures as a table, its
// surviving mutations grouped by what they mean, and a summary line.
func writeTestTable(w io.Writer, r *testReport, colour bool) error {
	fixtures, failed, blind := 0, 0, 0
	for i := range r.Consumers {
		cr := &r.Consumers[i]
		probes := "no probe uses it"
		if len(cr.Probes) > 0 {
			probes = "probes: " + strings.Join(cr.Probes, ", ")
		}
		fmt.Fprintf(w, "%s v%s (%s; %s)\n", cr.Name, cr.Version, cr.Source, probes)
		if len(cr.Fixtures) == 0 {
			fmt.Fprintln(w, "  no fixtures: nothing shows that this rule does what it should")
		}
		n, bad, err := writeFixtureTable(w, cr.Name, cr.Fixtures, colour)
		if err != nil {
			return err
		}
		fixtures, failed = fixtures+n, failed+bad
		if cr.Mutation != nil {
			blind += writeMutationTable(w, cr.Mutation)
		}
		fmt.Fprintln(w)
	}
	for i := range r.Probes {
		pr := &r.Probes[i]
		fmt.Fprintf(w, "probe %s (steps: %s)\n", pr.Name, strings.Join(pr.Steps, ", "))
		if len(pr.Fixtures) == 0 {
			fmt.Fprintln(w, "  no fixtures: nothing shows that the probe catches a false claim; give it fixtures with canned answers per step")
		}
		n, bad, err := writeFixtureTable(w, pr.Name, pr.Fixtures, colour)
		if err != nil {
			return err
		}
		fixtures, failed = fixtures+n, failed+bad
		if pr.Mutation != nil {
			blind += writeMutationTable(w, pr.Mutation)
		}
		fmt.Fprintln(w)
	}
	if len(r.Unused) > 0 {
		fmt.Fprintf(w, "not tested (no probe uses them; name them with --consumer): %s\n", strings.Join(r.Unused, ", "))
	}
	verdict := paint("ok", results.Pass, colour)
	if !r.OK {
		verdict = paint("FAIL", results.ContractError, colour)
	}
	probes := ""
	if len(r.Probes) > 0 {
		probes = fmt.Sprintf(", %d probe(s) with steps", len(r.Probes))
	}
	fmt.Fprintf(w, "%s: %d consumer(s)%s, %d fixture(s), %d failed", verdict, len(r.Consumers), probes, fixtures, failed)
	if blind > 0 {
		fmt.Fprintf(w, ", %d mutation problem(s)", blind)
	}
	fmt.Fprintln(w)
	return nil
}

// writeFixtureTable prints the fixtures of a consumer or a multi-step
// probe, then what each failing one got; it returns how many there are
// and how many failed.
func writeFixtureTable(w io.Writer, owner string, fixtures []fixtureReport, colour bool) (n, failed int, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for j := range fixtures {
		f := &fixtures[j]
		mark := paint("ok", results.Pass, colour)
		if !f.OK {
			failed++
			mark = paint("FAIL", results.ContractError, colour)
		}
		fmt.Fprintf(tw, "  %s\t%s\texpected %s\tgot %s\n", mark, present.Printable(f.Name), present.Printable(f.Expected), present.Printable(f.got()))
	}
	if err := tw.Flush(); err != nil {
		return 0, 0, err
	}
	for _, f := range fixtures {
		if !f.OK {
			// A message quotes the answer a rule judged; printable, as in
			// check, whoever wrote the answer.
			fmt.Fprintf(w, "  FAIL %s / %s: %s\n", present.Printable(owner), present.Printable(f.Name), present.Printable(f.Mismatch))
			if f.Message != "" {
				fmt.Fprintf(w, "       %s: %s\n", present.Printable(string(f.Code)), present.Printable(f.Message))
			}
		}
	}
	return len(fixtures), failed, nil
}

// writeMutationTable prints one consumer's mutation analysis and returns
// how many of its findings fail it.
func writeMutationTable(w io.Writer, m *mutationReport) int {
	problems := len(m.KilledControls)
	for _, s := range m.Survivors {
		if s.Class == consumers.BlindSpot && s.Accepted == "" {
			problems++
		}
	}
	fmt.Fprintf(w, "  mutations: %d on %d base(s), %d killed, %d survived; score %.0f%%\n",
		m.Total, len(m.Bases), m.Killed, len(m.Survivors), 100*m.Score())
	for _, base := range slices.Sorted(maps.Keys(m.Skipped)) {
		fmt.Fprintf(w, "    base %q not used: %s\n", base, present.Printable(m.Skipped[base]))
	}
	for _, name := range m.Stale {
		fmt.Fprintf(w, "    note: accept_mutations entry %q matched no surviving mutation; remove it or fix its name\n", name)
	}
	for _, name := range m.KilledControls {
		fmt.Fprintf(w, "    FAIL positive control killed: %s: the rule rejects an unrelated added field, so it breaks on harmless additive changes\n", present.Printable(name))
	}
	for _, s := range m.Survivors {
		label := map[consumers.SurvivorClass]string{
			consumers.BlindSpot: "BLIND SPOT", consumers.PositiveControl: "control",
			consumers.UnreadField: "harmless", consumers.ByDesign: "by design",
		}[s.Class]
		if s.Accepted != "" {
			label = "accepted"
		}
		fmt.Fprintf(w, "    %-10s  %s  [%s]\n", label, present.Printable(s.Mutation.Name), present.Printable(s.Base))
		// With --from-db a base is a provider's recorded answer, and a
		// diff line quotes it.
		for _, line := range s.Diff {
			fmt.Fprintf(w, "                %s\n", present.Printable(line))
		}
		switch {
		case s.Accepted != "":
			fmt.Fprintf(w, "                accepted: %s\n", present.Printable(s.Accepted))
		case s.Class == consumers.BlindSpot, s.Class == consumers.ByDesign:
			// A blind spot says why it matters; a change by design says
			// what allows it: min_results 0, or the fixture that shows it.
			fmt.Fprintf(w, "                %s\n", present.Printable(s.Why))
		}
	}
	return problems
}

// JUnit XML, as CI systems read it: a suite per consumer, a case per
// fixture, and a case per mutation finding (a failure for an unaccepted
// blind spot or a killed positive control, skipped when accepted).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func junitOf(r *testReport) junitSuites {
	out := junitSuites{Name: "toolpulse test"}
	var total time.Duration
	add := func(s junitSuite, took time.Duration) {
		total += took
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Suites = append(out.Suites, s)
	}
	for _, cr := range r.Consumers {
		add(junitSuiteOf(cr.Name, cr.Fixtures, cr.Mutation))
	}
	for _, pr := range r.Probes {
		add(junitSuiteOf("probe "+pr.Name, pr.Fixtures, pr.Mutation))
	}
	out.Time = seconds(total)
	return out
}

// junitSuiteOf is the suite of one consumer or multi-step probe: a case per
// fixture and per mutation finding.
func junitSuiteOf(name string, fixtures []fixtureReport, m *mutationReport) (junitSuite, time.Duration) {
	s := junitSuite{Name: name}
	var took time.Duration
	for _, f := range fixtures {
		c := junitCase{Name: f.Name, Classname: name + ".fixtures", Time: seconds(f.Duration)}
		if !f.OK {
			text := fmt.Sprintf("expected %s\ngot %s", f.Expected, f.got())
			if f.Message != "" {
				text += "\n" + string(f.Code) + ": " + f.Message
			}
			c.Failure = &junitFailure{Message: f.Mismatch, Type: "fixture_mismatch", Text: text}
		}
		took += f.Duration
		s.Cases = append(s.Cases, c)
	}
	if m != nil {
		took += m.Duration
		for _, kc := range m.KilledControls {
			s.Cases = append(s.Cases, junitCase{Name: kc, Classname: name + ".mutations", Time: "0.000",
				Failure: &junitFailure{Message: "positive control killed", Type: "killed_control",
					Text: "the rule rejects an unrelated added field, so it breaks on harmless additive changes"}})
		}
		for _, sv := range m.Survivors {
			c := junitCase{Name: sv.Mutation.Name + " [" + sv.Base + "]", Classname: name + ".mutations", Time: "0.000"}
			switch {
			case sv.Accepted != "":
				c.Skipped = &junitSkipped{Message: "accepted: " + sv.Accepted}
			case sv.Class == consumers.BlindSpot:
				c.Failure = &junitFailure{Message: "blind spot: " + sv.Mutation.Name, Type: "blind_spot",
					Text: strings.Join(append(append([]string{}, sv.Diff...), sv.Why), "\n")}
			default:
				c.Skipped = &junitSkipped{Message: string(sv.Class) + ": " + sv.Why}
			}
			s.Cases = append(s.Cases, c)
		}
	}
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	s.Time = seconds(took)
	return s, took
}

func writeJUnit(path string, r *testReport) error {
	b, err := xml.MarshalIndent(junitOf(r), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
