package consumers

import (
	"fmt"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results/shape"
)

// MutationBase is a passing response a consumer is mutation-tested on.
type MutationBase struct {
	Name       string // the fixture's name, or "db: <probe>" for a recorded sample
	Response   any
	Status     int // 0 means 200
	Headers    map[string]string
	MinResults int // as the probe or fixture requires
	// Result and Tool are what an MCP consumer's rules see beside the
	// response (Input.Result, Input.Tool); nil for HTTP, and Result nil
	// for a recorded answer, which keeps only the response.
	Result, Tool map[string]any
	// ResultWith, when set, returns Result carrying a mutated response
	// where the response came from (structuredContent, or the text
	// item), so that a rule reading result sees the mutation that a rule
	// reading response sees. nil leaves Result unchanged.
	ResultWith func(response any) map[string]any
	// Profile, when set, is the learned shape profile of the probe the
	// response was recorded from: the objects at the positions it learned
	// are keyed (see shape's Keyed maps) are maps, as drift judges the
	// probe's answers, so mutation paths and diffs read facets.*.count
	// where drift writes facets.*. When nil, the profile learned from all
	// the passing bases, in order, stands in for it (see NewMutator).
	Profile *shape.Profile
}

// SurvivorClass says whether a surviving mutation is a problem.
type SurvivorClass string

// The classes, in the order MutationTest tries them.
const (
	// PositiveControl is add_field: it must survive.
	PositiveControl SurvivorClass = "positive_control"
	// ByDesign is a change the consumer's own contract allows: empty_list
	// under min_results 0, where an empty answer is valid by the probe's
	// own contract (seed 003), or a change into a shape that a passing base
	// already shows at that path (a fixture with next_cursor: null makes
	// retype next_cursor string->null one): the consumer accepts it on
	// purpose, and says so with that base.
	ByDesign SurvivorClass = "by_design"
	// UnreadField is a change below a key the rule demonstrably never
	// reads (see Mutations): harmless to it.
	UnreadField SurvivorClass = "unread_field"
	// BlindSpot is a contract change the rule still passes and should
	// notice.
	BlindSpot SurvivorClass = "blind_spot"
)

// Survivor is a mutation the consumer still passed.
type Survivor struct {
	Base     string
	Mutation Mutation // Response is dropped (nil): the diff shows the change
	Class    SurvivorClass
	Diff     []string // shape.Diff(shape.Of(base), shape.Of(mutated)), SPEC §5 wording
	Why      string   // one sentence a person can act on, naming the path
	Accepted string   // the accept_mutations reason when the consumer acknowledges it; "" otherwise
}

// MutationReport is the result of mutation-testing one consumer.
type MutationReport struct {
	Consumer string
	Bases    []string          // names of the bases that passed and were mutated
	Skipped  map[string]string // base name -> why it was not used: "it does not pass: <code>: <message>"
	Total    int               // mutations run
	Killed   int               // mutations the consumer rejected (any non-pass verdict), positive controls included
	// Survivors lists every survivor, all classes, in base order and then
	// in the order of Mutations.
	Survivors []Survivor
	// KilledControls names the positive-control mutations the rule
	// rejected and the consumer does not accept, one entry per base it was
	// rejected on: a rule that rejects an unrelated added field breaks on
	// harmless additive changes, so this fails CI too.
	KilledControls []string
}

// Score is killed / (killed + blind spots), in [0, 1]; 1 when there is
// nothing to kill. Blind spots are the unaccepted ones: an accepted
// survivor is acknowledged as the rule's contract, not missed by it.
func (r MutationReport) Score() float64 {
	blind := len(r.BlindSpots())
	if r.Killed+blind == 0 {
		return 1
	}
	return float64(r.Killed) / float64(r.Killed+blind)
}

// Failed reports whether the report should fail CI: an unaccepted blind
// spot, or a killed positive control that is not accepted.
func (r MutationReport) Failed() bool {
	return len(r.KilledControls) > 0 || len(r.BlindSpots()) > 0
}

// BlindSpots returns the unaccepted blind-spot survivors.
func (r MutationReport) BlindSpots() []Survivor {
	var out []Survivor
	for _, s := range r.Survivors {
		if s.Class == BlindSpot && s.Accepted == "" {
			out = append(out, s)
		}
	}
	return out
}

// MutationTest mutates every base that passes and runs the consumer on each
// mutation (same Status, Headers and MinResults as the base). A survivor is
// a mutation that still yields pass. Survivors, and rejected positive
// controls, whose Name, or whose Kind alone (e.g. "empty_list"), appears in
// c.AcceptMutations are accepted with its reason; the name wins over the
// kind.
//
// A survivor is classified in this order: add_field is a PositiveControl;
// empty_list under MinResults 0 is ByDesign; a mutation below a key the rule
// demonstrably never reads is UnreadField (see Mutations: the key may be
// the mutation's Field or one on the way to it); a mutation into what a
// passing base (this one or another) already shows at its path is
// ByDesign (see shows); everything else is a BlindSpot. A mutation with no
// key on its path ("$", "$[]") is never UnreadField: wrapping, emptying or
// retyping the whole answer always matters. A list-level mutation is about
// the last key of its path, so wrapping a tags list the rule skips is
// harmless, while wrapping the list the rule selects is a blind spot.
//
// Maps are judged as drift judges them: besides the objects shape.Of calls
// maps, the objects a base's Profile (or the profile learned from the
// passing bases: see NewMutator) learned are keyed are maps, so that ids
// like src_001 that change from base to base are one path, facets.*.
func (c *Consumer) MutationTest(bases []MutationBase) MutationReport {
	r := MutationReport{Skipped: map[string]string{}}
	if c != nil {
		r.Consumer = c.Name
	}
	reads := c.ReadFields()
	acceptance := c.Acceptance()
	var passing []MutationBase
	for _, b := range bases {
		if v := c.Apply(b.input(), b.MinResults); v.Err != nil {
			r.Skipped[b.Name] = fmt.Sprintf("it does not pass: %s: %s", v.Err.Code, v.Err.Message)
			continue
		}
		passing = append(passing, b)
	}
	mu := NewMutator(passing)
	for _, b := range passing {
		in := b.input()
		r.Mutate(Mutand{Base: b, Mutator: mu, Reads: reads, Accept: acceptance,
			Passes: func(m Mutation) bool {
				in.Response = m.Response
				if b.ResultWith != nil {
					in.Result = b.ResultWith(m.Response)
				}
				return c.Apply(in, b.MinResults).Err == nil
			}})
	}
	return r
}

// A Mutand is one passing base under mutation test, with what judges its
// mutations: a consumer's rules on the mutated answer, or a whole
// multi-step probe run on its fixture with one step's answer mutated.
type Mutand struct {
	Base MutationBase
	// Mutator holds all the passing bases of the same answer, against
	// which a survivor is classified.
	Mutator *Mutator
	Reads   FieldSet              // what the rules may read of the answer
	Accept  func(Mutation) string // the accept_mutations reason; "" when not accepted
	Passes  func(Mutation) bool   // whether the subject still passes on the mutated answer
	// ControlPrefix goes before the name of a killed positive control in
	// KilledControls, to say which base it was killed on.
	ControlPrefix string
}

// Mutate runs every mutation of x's base through x.Passes and adds what
// it finds to r: killed mutations, killed positive controls that are not
// accepted, and survivors, classified and with their accept_mutations
// reason.
func (r *MutationReport) Mutate(x Mutand) {
	r.Bases = append(r.Bases, x.Base.Name)
	var baseShape shape.Shape // only needed once something survives
	x.Mutator.Each(x.Base, x.Reads, func(m Mutation) bool {
		r.Total++
		if !x.Passes(m) {
			r.Killed++
			if m.Kind == MutAddField && x.Accept(m) == "" {
				r.KilledControls = append(r.KilledControls, x.ControlPrefix+m.Name)
			}
			return true
		}
		if baseShape.String() == "" {
			baseShape = x.Mutator.shapeOf(x.Base, x.Base.Response)
		}
		s := x.Mutator.survivor(x.Base, baseShape, m)
		s.Accepted = x.Accept(m)
		r.Survivors = append(r.Survivors, s)
		return true
	})
}

// Mutator mutates the passing bases of one consumer, or of one step of a
// multi-step probe, and describes the mutations that still pass, each
// judged against all those bases: what one of them already shows is by
// design, and the positions a shape profile learns are keyed are maps.
type Mutator struct {
	passing []MutationBase
	learned *shape.Profile
	shown   []shownBase // built once something survives
}

// learnedEpoch is when the first base counts as answered for the learned
// profile; the next ones follow a second apart, well within
// shape.ProfileWindow, so that the profile forgets none of them.
var learnedEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// NewMutator prepares passing, the bases that pass, in order. It learns a
// shape profile from all of them, as the daemon learns a probe's answers
// one after another, so that objects whose keys change from base to base
// while their values keep one shape (src_001 in one, src_007 and src_042
// in another) are maps, as drift would judge them. A base with a Profile
// of its own is judged by that one instead.
func NewMutator(passing []MutationBase) *Mutator {
	mu := &Mutator{passing: passing, learned: &shape.Profile{}}
	at := learnedEpoch
	for _, b := range passing {
		mu.learned.Learn(shape.Of(b.Response), at)
		at = at.Add(time.Second)
	}
	return mu
}

// profile is the profile b is judged by.
func (mu *Mutator) profile(b MutationBase) *shape.Profile {
	if b.Profile != nil {
		return b.Profile
	}
	return mu.learned
}

// shapeOf is the shape of v, a response of b or one of its mutations, as
// drift would record it: with the keyed positions of b's profile written
// as maps.
func (mu *Mutator) shapeOf(b MutationBase, v any) shape.Shape {
	return mu.profile(b).Canonical(shape.Of(v))
}

// Each calls yield with each mutation of b, one of the passing bases, in
// the order of Mutations, until yield returns false; the positions b's
// profile learned are keyed are maps.
func (mu *Mutator) Each(b MutationBase, reads FieldSet, yield func(Mutation) bool) {
	eachMutation(b.Response, reads, mu.profile(b), yield)
}

func (mu *Mutator) survivor(b MutationBase, baseShape shape.Shape, m Mutation) Survivor {
	if mu.shown == nil {
		mu.shown = mu.shownBases()
	}
	class, by := survivorClass(m, b.MinResults, shownBy(mu.shown, m))
	s := Survivor{Base: b.Name, Mutation: m, Class: class,
		Diff: shape.Diff(baseShape, mu.shapeOf(b, m.Response)), Why: why(m, class, by)}
	s.Mutation.Response = nil
	return s
}

// input is what the consumer sees of the base.
func (b MutationBase) input() Input {
	in := Input{Response: b.Response, Status: b.Status, Headers: b.Headers, Result: b.Result, Tool: b.Tool}
	if in.Status == 0 {
		in.Status = 200
	}
	return in
}

// survivorClass sorts a survivor; shownBy is the passing base that already
// shows what the mutation makes, or "". It returns shownBy when that base
// is why the survivor is ByDesign, "" otherwise.
func survivorClass(m Mutation, minResults int, shownBy string) (SurvivorClass, string) {
	switch {
	case m.Kind == MutAddField:
		return PositiveControl, ""
	case m.Kind == MutEmptyList && minResults <= 0:
		return ByDesign, ""
	case m.unread != "":
		return UnreadField, ""
	case shownBy != "":
		return ByDesign, shownBy
	}
	return BlindSpot, ""
}

// shownBase is a passing base with its positions by path.
type shownBase struct {
	name string
	at   map[string]*pathNode
}

// shownBases indexes the positions of the passing bases, each judged by
// its profile, so that their paths are those of the mutations.
func (mu *Mutator) shownBases() []shownBase {
	out := make([]shownBase, 0, len(mu.passing))
	for _, b := range mu.passing {
		root := positions(b.Response, mu.profile(b))
		if root == nil {
			continue // too big to tell: shows nothing
		}
		sb := shownBase{name: b.Name, at: map[string]*pathNode{}}
		var index func(p *pathNode)
		index = func(p *pathNode) {
			sb.at[p.path] = p
			for _, c := range p.children {
				index(c)
			}
			for _, c := range []*pathNode{p.elem, p.vals} {
				if c != nil {
					index(c)
				}
			}
		}
		index(root)
		out = append(out, sb)
	}
	return out
}

// shownBy returns the name of the first base that shows, at m's path,
// what m makes of it, or "" when none does.
func shownBy(bases []shownBase, m Mutation) string {
	for _, b := range bases {
		if shows(b.at, m) {
			return b.name
		}
	}
	return ""
}

// shows reports whether a base, by its positions, already has at m's path
// the shape m turns it into: the kind a retype makes, an object lacking
// the key remove_field drops (or holding the new name of rename_key), an
// empty list, string items, a list where an object was, or the
// {"items": ...} and {"value": ...} objects of wrap_list and nest_field.
func shows(at map[string]*pathNode, m Mutation) bool {
	n := at[m.Path]
	lacks := func() bool { // some object holding the key lacks it
		h := at[m.holder]
		return h != nil && h.objects > 0 && (n == nil || n.present < h.objects)
	}
	switch m.Kind {
	case MutRetype:
		return n != nil && n.kinds&kindNamed(m.to) != 0
	case MutRemoveField:
		return lacks()
	case MutRenameKey:
		h := at[m.holder]
		return lacks() && h.children[m.to] != nil
	case MutEmptyList:
		return n != nil && n.empty
	case MutNonObjectItems:
		return n != nil && n.elem != nil && n.elem.kinds&kString != 0
	case MutUnwrapObject:
		return n != nil && n.kinds&kList != 0
	case MutWrapList:
		return n != nil && n.children[wrapKey] != nil && n.children[wrapKey].kinds&kList != 0
	case MutNestField:
		return n != nil && n.children[nestKey] != nil
	}
	return false
}

// kindNamed is the kind a retype's to names.
func kindNamed(name string) kindSet {
	for _, kn := range kindNames {
		if kn.name == name {
			return kn.k
		}
	}
	return 0
}

// why is the Survivor's sentence: what changed, then why that matters or
// does not; shownBy is the passing base that shows the change, or "".
func why(m Mutation, class SurvivorClass, shownBy string) string {
	field := subject(m)
	var what, risk string
	switch m.Kind {
	case MutWrapList:
		what = fmt.Sprintf("the list at %s was wrapped in an object", m.Path)
		risk = fmt.Sprintf("it never checks that %s is a list, so code iterating it would get the object's keys instead of its items", m.Path)
	case MutUnwrapObject:
		what = fmt.Sprintf("the object at %s was replaced by its list %s", m.Path, m.Field)
		risk = fmt.Sprintf("it never checks that %s is an object, so code reading %s from it would break", m.Path, m.Field)
	case MutRemoveField:
		what = fmt.Sprintf("%s was removed", m.Path)
		risk = fmt.Sprintf("it never requires %s, so code reading it would get nothing", field)
	case MutRetype:
		what = fmt.Sprintf("%s turned from %s into %s", m.Path, m.from, m.to)
		switch {
		case m.to == "null":
			risk = fmt.Sprintf("it never checks that %s is not null, so code using it would break", field)
		case m.from == "number":
			risk = fmt.Sprintf("it never checks the type of %s, so code doing arithmetic on it would break", field)
		default:
			risk = fmt.Sprintf("it never checks the type of %s, so code treating it as text would break", field)
		}
	case MutEmptyList:
		what = fmt.Sprintf("the list at %s was emptied", m.Path)
		risk = "an empty answer counts as a success, so a provider that lost its results would look like one that found nothing"
	case MutNonObjectItems:
		what = fmt.Sprintf("the items of %s turned from objects into strings", m.Path)
		risk = "it never checks that each item is an object, so code reading their fields would break"
	case MutNestField:
		what = fmt.Sprintf("%s was moved into an object under %q", m.Path, nestKey)
		risk = fmt.Sprintf("it never checks what %s holds, so code using it directly would break", field)
	case MutRenameKey:
		what = fmt.Sprintf("%s was renamed to %s", m.Path, m.to)
		risk = fmt.Sprintf("it never requires %s, so code reading it by its old name would get nothing", field)
	case MutAddField:
		return "an unrelated field was added and the rule still passes, as it must"
	default:
		what = fmt.Sprintf("%s changed (%s)", m.Path, m.Kind)
		risk = "it never checks this part of the contract"
	}
	switch {
	case class == ByDesign && shownBy != "":
		return fmt.Sprintf("%s and the rule still passes, by design: the passing base %q already shows that at %s", what, shownBy, m.Path)
	case class == ByDesign:
		return what + " and the rule still passes, as min_results 0 allows: an empty answer is valid by the probe's own contract"
	case class == UnreadField:
		return fmt.Sprintf("%s and the rule still passes: harmless, the rule never reads %s", what, m.unread)
	}
	return what + " and the rule still passes: " + risk
}

// subject names what a retype, removal or rename is about in a sentence:
// the key ("score"), each item of a list ("each item of results"), or the
// response itself.
func subject(m Mutation) string {
	switch {
	case strings.HasSuffix(m.Path, "[]"):
		list := strings.TrimSuffix(m.Path, "[]")
		if list == "$" {
			list = "the response"
		}
		return "each item of " + list
	case m.Field != "":
		return m.Field
	}
	return "the response"
}

// Acceptance returns how c's accept_mutations judge a mutation: the
// reason of the first entry naming it, or its kind alone (the name wins
// over the kind), or "" when none does. A nil consumer accepts nothing.
func (c *Consumer) Acceptance() func(Mutation) string {
	accepted := map[string]string{}
	if c != nil {
		for _, a := range c.AcceptMutations {
			if _, dup := accepted[a.Mutation]; !dup {
				accepted[a.Mutation] = a.Reason
			}
		}
	}
	return func(m Mutation) string {
		if reason, ok := accepted[m.Name]; ok {
			return reason
		}
		return accepted[string(m.Kind)]
	}
}
