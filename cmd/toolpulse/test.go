package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
	"github.com/toolpulse/toolpulse/runner/prober"
)

type testCmd struct {
	Consumer []string `placeholder:"NAME|FILE" help:"Test this consumer: a name from the config or a consumer file (repeatable; default: every consumer a probe uses)."`
	Mutate   bool     `help:"Also mutate every passing fixture and report the contract changes the rule would wrongly accept."`
	FromDB   bool     `name:"from-db" help:"With --mutate, also mutate each probe's latest recorded passing response."`
	Format   string   `enum:"table,json" default:"table" help:"Output: table, or json (one report)."`
	JUnit    string   `name:"junit" placeholder:"FILE" help:"Also write a JUnit XML report to FILE."`
}

// target is one consumer under test, with the probes that use it.
type target struct {
	consumer *consumers.Consumer
	source   string // "checks.yaml" or the consumer file's path
	probes   []*checks.Probe
}

// Run judges every fixture of the chosen consumers and, with --mutate,
// mutation-tests them. Exit 0 when every fixture meets its expectation
// and no mutation analysis fails; 1 otherwise; 78 for a bad config or
// consumer file; 64 for an unknown consumer name.
func (c *testCmd) Run(e *env, root *cli) error {
	if c.FromDB && !c.Mutate {
		return usageError("--from-db needs --mutate")
	}
	cfg, targets, err := c.targets(e, root)
	if err != nil {
		return err
	}
	var samples map[string]consumers.MutationBase
	if c.FromDB {
		if samples, err = recordedBases(e, root, cfg); err != nil {
			return err
		}
	}
	report := testReport{OK: true, Unused: unusedConsumers(cfg, c.Consumer)}
	ex := prober.NewExecutor(prober.Options{})
	for _, t := range targets {
		cr := testConsumer(ex, t, c.Mutate, samples)
		report.OK = report.OK && cr.OK
		report.Consumers = append(report.Consumers, cr)
	}
	if cfg != nil && len(c.Consumer) == 0 {
		for _, p := range cfg.Probes {
			if !p.MultiStep() {
				continue
			}
			pr := testProbe(ex, p, c.Mutate)
			report.OK = report.OK && pr.OK
			report.Probes = append(report.Probes, pr)
		}
	}

	if c.JUnit != "" {
		if err := writeJUnit(c.JUnit, &report); err != nil {
			return softwareError(fmt.Errorf("writing the JUnit report: %w", err))
		}
	}
	if c.Format == "json" {
		err = writeTestJSON(e.stdout, &report)
	} else {
		err = writeTestTable(e.stdout, &report, useColour(e))
	}
	if err != nil {
		return softwareError(err)
	}
	if !report.OK {
		return exitStatus(exitContractError)
	}
	return nil
}

// targets resolves --consumer into consumers to test. Without it, every
// consumer a probe uses is tested. The config is needed for names and
// --from-db; for consumer files alone it is read only when present.
func (c *testCmd) targets(e *env, root *cli) (*checks.Config, []target, error) {
	var files, names []string
	for _, arg := range c.Consumer {
		if isConsumerFile(arg) {
			files = append(files, arg)
		} else {
			names = append(names, arg)
		}
	}
	var cfg *checks.Config
	if len(names) > 0 || len(files) == 0 || c.FromDB || configExists(e, root) {
		var err error
		if cfg, err = root.loadConfig(e); err != nil {
			return nil, nil, err
		}
	}
	var out []target
	if len(c.Consumer) == 0 {
		for _, name := range usedConsumers(cfg) {
			out = append(out, target{consumer: cfg.Consumers[name], source: cfg.Path, probes: probesUsing(cfg, name)})
		}
		return cfg, out, nil
	}
	for _, name := range names {
		cons, ok := cfg.Consumers[name]
		if !ok {
			return nil, nil, usageError("no consumer named %q in %s", name, cfg.Path)
		}
		out = append(out, target{consumer: cons, source: cfg.Path, probes: probesUsing(cfg, name)})
	}
	for _, file := range files {
		cons, err := checks.LoadConsumer(file)
		if err != nil {
			return nil, nil, &exitError{code: exitConfig, err: err}
		}
		t := target{consumer: cons, source: file}
		if cfg != nil {
			// A file the config also uses keeps its probes' settings.
			t.probes = probesUsing(cfg, cons.Name)
		}
		out = append(out, t)
	}
	return cfg, out, nil
}

// isConsumerFile tells a consumer file from a consumer name: names are
// snake_case, so anything with a path separator or a YAML extension is a
// file.
func isConsumerFile(arg string) bool {
	ext := filepath.Ext(arg)
	return strings.ContainsRune(arg, filepath.Separator) || strings.Contains(arg, "/") || ext == ".yaml" || ext == ".yml"
}

func configExists(e *env, root *cli) bool {
	_, err := os.Stat(root.configPath(e))
	return err == nil
}

// usedConsumers lists the consumers the config's probes use, sorted.
func usedConsumers(cfg *checks.Config) []string {
	seen := map[string]bool{}
	for _, p := range cfg.Probes {
		for _, c := range p.Consumers() {
			seen[c.Name] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for name := range seen {
			if !yield(name) {
				return
			}
		}
	})
}

// unusedConsumers lists the config's consumers no probe uses, for a hint,
// unless consumers were chosen explicitly.
func unusedConsumers(cfg *checks.Config, chosen []string) []string {
	if cfg == nil || len(chosen) > 0 {
		return nil
	}
	used := usedConsumers(cfg)
	var out []string
	for name := range cfg.Consumers {
		if !slices.Contains(used, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func probesUsing(cfg *checks.Config, consumer string) []*checks.Probe {
	var out []*checks.Probe
	for _, p := range cfg.Probes {
		for _, c := range p.Consumers() {
			if c.Name == consumer {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// expectStatus is the statuses a fixture of consumer is judged against:
// the union of the expect.status of the calls judged by it, or the
// default when none is.
func expectStatus(probes []*checks.Probe, consumer string) []int {
	var out []int
	for _, p := range probes {
		for _, st := range p.Steps {
			if st.Consumer == nil || st.Consumer.Name != consumer {
				continue
			}
			for _, s := range st.Expect.Status {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	if out == nil {
		return checks.DefaultStatus
	}
	return out
}

// recordedBases reads each probe's latest passing response from the
// database, as a mutation base named "db: <probe>" judged under the
// probe's own min_results and by the probe's learned shape profile, so
// that the objects drift judges maps (ids like src_001 it learned across
// answers) are mutated as one path, named as drift lines name it.
func recordedBases(e *env, root *cli, cfg *checks.Config) (map[string]consumers.MutationBase, error) {
	store, _, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	names := make([]string, 0, len(cfg.Probes))
	for _, p := range cfg.Probes {
		names = append(names, p.Name)
	}
	samples, err := store.LatestPassSamples(e.ctx, names)
	if err != nil {
		return nil, softwareError(err)
	}
	out := map[string]consumers.MutationBase{}
	for _, p := range cfg.Probes {
		s, ok := samples[p.Name]
		if !ok || p.MultiStep() {
			continue // a multi-step run has no one answer of its own
		}
		b, err := recordedBase(p, s.Body)
		if err != nil {
			// Stored samples are whole bodies; one that does not decode is
			// skipped, not fatal.
			fmt.Fprintf(e.stderr, "toolpulse: the recorded response of %s does not decode (%v); skipped\n", p.Name, err)
			continue
		}
		if b.Profile, err = storedProfile(e, store, p.Name); err != nil {
			return nil, err
		}
		out[p.Name] = b
	}
	return out, nil
}

// storedProfile is probe's learned shape profile, or nil when it has none
// (never ran, or reset since). One that does not read is left out, as the
// daemon leaves it out, with a word on stderr: the mutations then judge
// maps by the bases alone.
func storedProfile(e *env, store store, probe string) (*shape.Profile, error) {
	sp, found, err := store.ShapeProfile(e.ctx, probe)
	if err != nil {
		return nil, softwareError(err)
	}
	if !found || sp.Data == "" {
		return nil, nil
	}
	p := &shape.Profile{}
	if err := json.Unmarshal([]byte(sp.Data), p); err != nil {
		fmt.Fprintf(e.stderr, "toolpulse: the stored shape profile of %s does not read (%v); its maps are judged by the answers alone\n", probe, err)
		return nil, nil
	}
	return p, nil
}

// recordedBase is p's recorded answer body as a mutation base: the
// response of an HTTP probe; for an MCP probe the whole CallToolResult,
// mutated where its response came from, as a result: fixture is.
func recordedBase(p *checks.Probe, body string) (consumers.MutationBase, error) {
	name, call := "db: "+p.Name, p.Call()
	if call.MCP == nil {
		v, err := consumers.DecodeJSON([]byte(body))
		return consumers.MutationBase{Name: name, Response: v, MinResults: call.Expect.MinResults}, err
	}
	v, err := consumers.DecodeJSON([]byte(body))
	if err != nil {
		return consumers.MutationBase{}, err
	}
	result, ok := v.(map[string]any)
	if !ok {
		return consumers.MutationBase{}, errors.New("not a CallToolResult")
	}
	b, err := prober.FixtureBase(consumers.Fixture{Name: name, Result: result, MinResults: call.Expect.MinResults})
	return b, err
}

// testConsumer judges t's fixtures and, with mutate, mutation-tests the
// consumer on the fixtures that passed as expected and on the recorded
// responses of its probes.
func testConsumer(ex *prober.Executor, t target, mutate bool, recorded map[string]consumers.MutationBase) consumerReport {
	c := t.consumer
	cr := consumerReport{Name: c.Name, Version: c.Version, RuleHash: c.RuleHash, Source: t.source, OK: true}
	for _, p := range t.probes {
		cr.Probes = append(cr.Probes, p.Name)
	}
	status := expectStatus(t.probes, c.Name)
	var bases []consumers.MutationBase
	for _, f := range c.Fixtures {
		start := time.Now()
		v := ex.JudgeFixture(c, f, status)
		fr := fixtureReport{Name: f.Name, Expected: f.Expect.String(), Outcome: v.Outcome, Code: v.Code(),
			Selected: v.Selected, Validated: v.Validated, Mismatch: f.Expect.Mismatch(v.Outcome, v.Code(), v.Selected),
			Duration: time.Since(start)}
		if v.Error != nil {
			fr.Message = v.Error.Message
		}
		fr.OK = fr.Mismatch == ""
		cr.OK = cr.OK && fr.OK
		cr.Fixtures = append(cr.Fixtures, fr)
		if fr.OK && v.Outcome == "pass" {
			// A result: fixture is mutated as what the rules see as response.
			if b, err := prober.FixtureBase(f); err == nil {
				bases = append(bases, b)
			}
		}
	}
	if !mutate {
		return cr
	}
	for _, p := range t.probes {
		if b, ok := recorded[p.Name]; ok {
			bases = append(bases, b)
		}
	}
	start := time.Now()
	m := c.MutationTest(bases)
	cr.Mutation = &mutationReport{MutationReport: m, Duration: time.Since(start), Stale: staleAccepts(c, m)}
	cr.OK = cr.OK && !m.Failed()
	return cr
}

// testProbe judges a multi-step probe's canned runs (SPEC §11) and, with
// mutate, mutates each step's answer of every passing one.
func testProbe(ex *prober.Executor, p *checks.Probe, mutate bool) probeReport {
	pr := probeReport{Name: p.Name, OK: true}
	for _, s := range p.Steps {
		pr.Steps = append(pr.Steps, s.Name)
	}
	var passing []checks.ProbeFixture
	for _, f := range p.Fixtures {
		start := time.Now()
		v := ex.JudgeProbeFixture(p, f)
		expected := f.Expect.String()
		if f.Step != "" {
			expected += " at step " + f.Step
		}
		fr := fixtureReport{Name: f.Name, Expected: expected, Outcome: v.Outcome, Code: v.Code(), Step: v.Step,
			Selected: v.Selected, Validated: v.Validated, Duration: time.Since(start),
			Mismatch: f.Expect.Mismatch(v.Outcome, v.Code(), v.Selected)}
		if fr.Mismatch == "" && f.Step != "" && v.Step != f.Step {
			fr.Mismatch = fmt.Sprintf("decided at step %q, want %q", v.Step, f.Step)
		}
		if v.Error != nil {
			fr.Message = v.Error.Message
		}
		fr.OK = fr.Mismatch == ""
		pr.OK = pr.OK && fr.OK
		pr.Fixtures = append(pr.Fixtures, fr)
		if fr.OK && v.Outcome == results.Pass {
			passing = append(passing, f)
		}
	}
	if !mutate {
		return pr
	}
	start := time.Now()
	// All the passing fixtures at once: what one of them shows at a step
	// is by design for the others.
	m := ex.MutateProbeFixtures(p, passing)
	pr.Mutation = &mutationReport{MutationReport: m, Duration: time.Since(start)}
	pr.OK = pr.OK && !m.Failed()
	return pr
}

// staleAccepts lists the accept_mutations entries that matched no
// survivor: a typo or a fixed rule, either way an entry that would
// silently accept a future blind spot of that name.
func staleAccepts(c *consumers.Consumer, m consumers.MutationReport) []string {
	var out []string
	for _, a := range c.AcceptMutations {
		used := false
		for _, s := range m.Survivors {
			used = used || s.Mutation.Name == a.Mutation || string(s.Mutation.Kind) == a.Mutation
		}
		if !used {
			out = append(out, a.Mutation)
		}
	}
	return out
}
