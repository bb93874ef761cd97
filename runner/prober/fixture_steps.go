package prober

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// cannedExchange answers a call from a probe fixture (SPEC §11): one
// canned answer per attempt or poll, the last one repeated, judged exactly
// as a live answer would be (its status against expect.status, a result's
// isError as a tool error).
type cannedExchange struct {
	s       *checks.Step
	answers []consumers.Fixture
	next    int
	payload []byte
	meta    answerMeta
}

func (x *cannedExchange) attempt(*attempt) attemptResult {
	f := x.answers[min(x.next, len(x.answers)-1)]
	x.next++
	status := cmp.Or(f.Status, http.StatusOK)
	x.meta = answerMeta{status: status, headers: f.Headers}
	response, isError, err := fixtureResponse(f)
	if err != nil {
		return attemptResult{code: results.CodeInternalError, message: err.Error(), httpStatus: status}
	}
	if f.Result != nil {
		x.meta.result, _ = json.Marshal(f.Result)
	}
	if x.payload, err = json.Marshal(response); err != nil {
		return attemptResult{code: results.CodeInternalError, message: err.Error(), httpStatus: status}
	}
	if code := codeOf(nil, status, x.s.Expect.Status); code != "" {
		return attemptResult{code: code, message: fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)), httpStatus: status}
	}
	if isError {
		code := results.CodeToolError
		if x.s.MCP != nil && x.s.MCP.IsError == results.Unavailable {
			code = results.CodeToolUnavailable
		}
		return attemptResult{code: code, message: "the fixture's result says isError: true", httpStatus: status}
	}
	return attemptResult{httpStatus: status}
}

func (x *cannedExchange) answer() ([]byte, answerMeta) { return x.payload, x.meta }

// exhausted reports whether the next attempt would repeat the last
// answer: a verification's canned polls have run out.
func (x *cannedExchange) exhausted() bool { return x.next >= len(x.answers) }

var _ exchange = (*cannedExchange)(nil)

// ProbeFixtureVerdict is what a run of a multi-step probe makes of a
// fixture: its outcome, and the step that decided it.
type ProbeFixtureVerdict struct {
	FixtureVerdict
	Step string
}

// JudgeProbeFixture runs multi-step probe p on fixture f's canned answers,
// with the engine a live run uses and without waiting: back-offs and
// polls take no time, and a verification's claim is judged on each of
// its step's answers in turn, the last one standing for the deadline.
func (e *Executor) JudgeProbeFixture(p *checks.Probe, f checks.ProbeFixture) ProbeFixtureVerdict {
	res := e.runCanned(p, f.Answers)
	v := ProbeFixtureVerdict{FixtureVerdict: FixtureVerdict{Outcome: res.Outcome, Error: res.Error,
		Selected: res.SelectedCount, Validated: res.ValidatedCount}, Step: res.Step}
	return v
}

func (e *Executor) runCanned(p *checks.Probe, answers map[string][]consumers.Fixture) (res results.Result) {
	op := &operation{e: e, p: p, parent: context.Background(), canned: answers}
	defer func() {
		if v := recover(); v != nil {
			op.recovered(&res, v)
		}
	}()
	res.StartedAt = e.now()
	res.OperationID = "fixture"
	res.Probe = p.Name
	op.run(&res)
	if !res.Outcome.Valid() {
		res.Fail(results.NewError(results.CodeInternalError, "operation ended without an outcome"))
	}
	return res
}

// MutateProbeFixtures mutation-tests multi-step probe p on its fixtures,
// those that pass: the answer of each step that a rule of the step reads
// (its consumer, until or captures) is mutated in turn, as `toolpulse test
// --mutate` mutates a consumer's fixture, and the whole probe runs on it.
// A mutation the probe still passes on is a survivor: a contract change of
// that step's answer the probe as a whole would miss, unless the step's
// consumer accepts it (accept_mutations), or it is by design: the step's
// answer in a passing fixture (this one or another) already shows what
// the mutation makes. A step's passing answers are judged together, as a
// consumer's passing fixtures are (consumers.Mutator): objects whose keys
// change from one to the next are maps, and mutations name their values
// as one path. A fixture that does not pass is skipped, and says why.
func (e *Executor) MutateProbeFixtures(p *checks.Probe, fixtures []checks.ProbeFixture) consumers.MutationReport {
	r := consumers.MutationReport{Consumer: p.Name, Skipped: map[string]string{}}
	var passing []checks.ProbeFixture
	for _, f := range fixtures {
		if v := e.JudgeProbeFixture(p, f); v.Outcome != results.Pass {
			r.Skipped[f.Name] = "it does not pass: " + string(v.Code()) + ": " + v.Error.Message
			continue
		}
		passing = append(passing, f)
	}
	// bases[i][j] is step i's answer in passing fixture j, when it has one
	// a rule reads; mutators[i] judges them together.
	bases := make([][]*consumers.MutationBase, len(p.Steps))
	mutators := make([]*consumers.Mutator, len(p.Steps))
	for i := range p.Steps {
		s := &p.Steps[i]
		if _, read := stepReads(s); !read {
			continue
		}
		minResults := 0
		if s.Consumer != nil {
			minResults = s.Expect.MinResults
		}
		bases[i] = make([]*consumers.MutationBase, len(passing))
		var all []consumers.MutationBase
		for j, f := range passing {
			answers := f.Answers[s.Name]
			if len(answers) == 0 {
				continue
			}
			response, _, err := fixtureResponse(answers[len(answers)-1])
			if err != nil {
				continue
			}
			b := consumers.MutationBase{Name: f.Name + ": step " + s.Name, Response: response, MinResults: minResults}
			bases[i][j] = &b
			all = append(all, b)
		}
		mutators[i] = consumers.NewMutator(all)
	}
	for j, f := range passing {
		for i := range p.Steps {
			if bases[i] == nil || bases[i][j] == nil {
				continue
			}
			e.mutateStep(p, f, &p.Steps[i], *bases[i][j], mutators[i], &r)
		}
	}
	return r
}

// mutateStep mutates base, the last answer of step s in passing fixture f,
// runs the whole probe on each mutation and adds what it finds to r.
func (e *Executor) mutateStep(p *checks.Probe, f checks.ProbeFixture, s *checks.Step, base consumers.MutationBase, mu *consumers.Mutator, r *consumers.MutationReport) {
	answers := f.Answers[s.Name]
	last := len(answers) - 1
	reads, _ := stepReads(s)
	r.Mutate(consumers.Mutand{Base: base, Mutator: mu, Reads: reads, ControlPrefix: base.Name + ": ",
		// The step's consumer acknowledges what its rules mean to let
		// through, for the probe as for itself.
		Accept: s.Consumer.Acceptance(),
		Passes: func(m consumers.Mutation) bool {
			mutated := answers[last]
			if mutated.Result != nil {
				mutated.Result = mcpsdk.ResultWith(mutated.Result, m.Response)
			} else {
				mutated.Response = m.Response
			}
			canned := maps.Clone(f.Answers)
			canned[s.Name] = append(append([]consumers.Fixture(nil), answers[:last]...), mutated)
			return e.runCanned(p, canned).Outcome == results.Pass
		}})
}

// stepReads is what s's rules may read of its answer; read is false when
// no rule reads it (a clean-up that only needs its status), so that its
// mutations could not matter.
func stepReads(s *checks.Step) (reads consumers.FieldSet, read bool) {
	reads = consumers.FieldSet{Known: true, Names: map[string]bool{}}
	if s.Consumer != nil {
		reads, read = consumers.Union(reads, s.Consumer.ReadFields()), true
	}
	if s.Until != nil {
		reads, read = consumers.Union(reads, s.Until.ReadFields()), true
	}
	for _, c := range s.Capture {
		if c.Rule != nil {
			reads, read = consumers.Union(reads, c.Rule.ReadFields()), true
		}
	}
	return reads, read
}
