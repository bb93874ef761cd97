package consumers

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolpulse/toolpulse/results/shape"
)

// MutationKind names a family of structural contract changes.
type MutationKind string

// The kinds, in the order Mutations produces them at one path.
const (
	MutWrapList       MutationKind = "wrap_list"        // a list L becomes {"items": L} (seed 000)
	MutUnwrapObject   MutationKind = "unwrap_object"    // an object with a list field F becomes that list
	MutRemoveField    MutationKind = "remove_field"     // a key disappears
	MutRetype         MutationKind = "retype"           // number->string, number->bool, string->number, any->null
	MutEmptyList      MutationKind = "empty_list"       // a non-empty list becomes []
	MutNonObjectItems MutationKind = "non_object_items" // a list of objects becomes a list of strings
	MutNestField      MutationKind = "nest_field"       // v becomes {"value": v}
	MutRenameKey      MutationKind = "rename_key"       // snake_case <-> camelCase, else the first letter's case flips
	MutAddField       MutationKind = "add_field"        // the positive control: an unrelated key is added
)

// MaxMutations is the most mutations Mutations returns for one base. A body
// with many distinct paths would otherwise cost thousands of consumer runs;
// the walk order decides, deterministically, which mutations are kept.
const MaxMutations = 2000

// mutationWork bounds the values Mutations visits and copies for one base,
// across all its mutations: every mutation at a path below a list copies
// each element on the way, so a wide body costs far more than its mutation
// count says. When a mutation would exceed it, that mutation and all later
// ones are left out.
const mutationWork = 1 << 23

// maxBaseValues bounds the values of a base Mutations looks at, as
// shape.Of does: in practice only Go values that share subtrees (YAML
// aliases) reach it, and such a base gets no mutations at all rather than
// some that depend on map order.
const maxBaseValues = 1 << 22

// Placeholders the mutations write: fixed so that names, responses and
// golden files stay deterministic.
const (
	addedKey    = "toolpulse_unrelated_field"
	addedValue  = "x"
	wrapKey     = "items"
	nestKey     = "value"
	stringItem  = "x"
	numberValue = 1
)

// Mutation is one structural change of a base response.
type Mutation struct {
	// Name is stable and unique per base: the kind, the path and, where a
	// path has several mutations of one kind, what they differ by:
	// "retype results[].score number->string", "wrap_list results",
	// "remove_field results[].title", "unwrap_object $ to results",
	// "rename_key next_cursor to nextCursor", "add_field $". Consumers name
	// it in accept_mutations.
	Name string
	Kind MutationKind
	// Path is the SPEC §5 path of what changed, as shape.Diff writes it
	// ("results[].score"; "$" for the root; "facets.*.count" below a map,
	// whose values are one path as a list's elements are); for
	// unwrap_object it is the object that became a list, for add_field the
	// object that gained a key.
	Path string
	// Field is the object key the mutation is about ("score"). A mutation
	// of a list or a list's elements is about the last key on its path
	// (empty_list at results[].tags is about "tags"), unwrap_object about
	// the list field that replaces the object, add_field about the key it
	// adds. It is "" only when no key leads to the path ("$", "$[]").
	Field string
	// Response is the mutated response. It shares every value the mutation
	// did not change with the base: treat it as read-only.
	Response any

	from, to string // retype: the kinds; rename_key: the new key in to
	holder   string // remove_field, rename_key: the path of the object losing the key
	// unread is the key on the way to Path that the rule demonstrably never
	// reads (see Mutations), or "" when it may read all of them.
	unread string
}

// Mutations returns every mutation of base, in a deterministic order (walk
// order: sorted keys, depth first; kinds in the order of the constants), at
// most MaxMutations of them. base is never modified.
//
// Mutations work on paths, as shape diffs do: a mutation at results[].score
// changes every element of the list results, so it reads like a provider's
// contract change and its shape diff is one line (two for rename_key). An
// object that shape.Of takes for a map (its keys are data: ids, hashes,
// dates) is one path too: facets.*.count changes the count of every value
// of facets, and its keys get no key-level mutations of their own (one key
// more or less is a map's data, not its contract). Where a path holds
// several kinds (number|string), a retype changes the values of its kind.
// wrap_list applies to every list, unwrap_object to every object with a
// list field (once per such field), retype to every scalar (number->string,
// number->bool, string->number) and turns every non-null value into null,
// empty_list applies to every non-empty list, non_object_items to every list
// holding objects, and add_field once: at the root object or, when the root
// is not an object, at the first object path in walk order, with the key
// "toolpulse_unrelated_field" (suffixed _2, _3... if taken) and the value
// "x". remove_field, nest_field and rename_key apply to every key the rule
// may read; rename_key is left out where the new name is taken or the key
// has no letter case to change.
//
// A key counts as not read when reads is Known and the rule demonstrably
// skips it: the rule accesses no member of that name but does read another
// key of the same object. A rule that reads no key of an object at all
// hands that object over unexamined (select: response.results passes the
// items on whole), so every key of it matters to the caller and counts as
// read. Everything below a skipped key counts as not read too: with a rule
// that reads results but not meta, meta.id is not read even when id is read
// elsewhere.
//
// Paths nested deeper than shape.MaxDepth are not mutated: shapes do not
// record them, so their change could not be shown. The work of all
// mutations of one base is bounded too (a body of several megabytes may get
// fewer mutations than MaxMutations).
//
// Mutations judges maps by one answer, base, as shape.Of does; MutationTest
// also treats as maps the objects a shape profile learned are keyed (see
// MutationBase.Profile).
func Mutations(base any, reads FieldSet) []Mutation {
	var out []Mutation
	eachMutation(base, reads, nil, func(m Mutation) bool {
		out = append(out, m)
		return true
	})
	return out
}

// eachMutation calls yield with each mutation of base in order until yield
// returns false or MaxMutations have been yielded. MutationTest uses it
// rather than Mutations so that one mutated response is alive at a time.
// The objects at the positions profile learned are keyed are maps (see
// positions); profile may be nil.
func eachMutation(base any, reads FieldSet, profile *shape.Profile, yield func(Mutation) bool) {
	eachMutationWithin(base, reads, profile, mutationWork, yield)
}

// eachMutationWithin is eachMutation with a work budget of its own, so that
// a test can show that running out of work keeps a prefix of the order.
func eachMutationWithin(base any, reads FieldSet, profile *shape.Profile, work int, yield func(Mutation) bool) {
	root := positions(base, profile)
	if root == nil {
		return
	}
	root.finish(reads)
	g := generator{base: base, budget: work, yield: yield, control: root.firstObject()}
	g.walk(root)
}

// kindSet is the set of kinds of the values found at one path.
type kindSet uint8

const (
	kNull kindSet = 1 << iota
	kBool
	kNumber
	kString
	kList
	kObject
)

// kindNames name kinds in shape's order: the order a union is written in.
var kindNames = []struct {
	k    kindSet
	name string
}{{kBool, "bool"}, {kList, "list"}, {kNull, "null"}, {kNumber, "number"}, {kObject, "object"}, {kString, "string"}}

func (s kindSet) String() string {
	var names []string
	for _, kn := range kindNames {
		if s&kn.k != 0 {
			names = append(names, kn.name)
		}
	}
	return strings.Join(names, "|")
}

func kindOf(v any) kindSet {
	switch v.(type) {
	case nil:
		return kNull
	case bool:
		return kBool
	case int, int64, float64:
		return kNumber
	case string:
		return kString
	case []any:
		return kList
	case map[string]any:
		return kObject
	}
	return 0
}

// step is one step of a path: into the key of an object, into every
// element of a list, or into every value of a map.
type step struct {
	key        string
	elem, vals bool
}

// pathNode is one path of the base with every value found there merged,
// like a node of a shape.
type pathNode struct {
	path  string
	field string // the last key on the path, "" when none
	steps []step // from the root

	// holder is the object position whose key this is; nil for the root,
	// for list elements and for map values.
	holder *pathNode

	kinds    kindSet
	nonEmpty bool // some list here has elements
	empty    bool // some list here has none
	objects  int  // the objects here
	present  int  // the objects of holder that have this key
	isMap    bool // the objects here are a map: their values are vals
	children map[string]*pathNode
	keys     []string // sorted keys of children, set by finish
	elem     *pathNode
	vals     *pathNode // the values of a map, path "p.*"
	unread   string    // see Mutation.unread
}

type posBuilder struct {
	budget  int
	profile *shape.Profile // may be nil
}

// positions returns the positions of base, its root first, or nil when
// base has too many values to look at. An object position is a map when
// shape.Of would call its objects one, or when profile (which may be nil)
// learned it is keyed: drift judges an answer by its profile's Canonical
// shape, and mutations name paths as its diff lines do.
func positions(base any, profile *shape.Profile) *pathNode {
	if profile != nil {
		// A profile that writes no object of base as a map keys none of
		// its positions: spare asking it about each.
		if s := shape.Of(base); profile.Canonical(s).String() == s.String() {
			profile = nil
		}
	}
	b := posBuilder{budget: maxBaseValues, profile: profile}
	root := &pathNode{path: "$"}
	b.add(root, []any{base}, 1)
	if b.budget < 0 {
		return nil
	}
	return root
}

// add merges vs, every value found at p, into p. It takes the values of a
// position all at once because whether its objects are a map is decided
// on all of them together, as shape.Of decides it on the objects its
// position merges.
func (b *posBuilder) add(p *pathNode, vs []any, depth int) {
	var elems []any
	var objs []map[string]any
	for _, v := range vs {
		b.budget--
		if b.budget < 0 {
			return
		}
		switch t := v.(type) {
		case []any:
			if depth > shape.MaxDepth {
				continue
			}
			p.kinds |= kList
			if len(t) == 0 {
				p.empty = true
				continue
			}
			p.nonEmpty = true
			elems = append(elems, t...)
		case map[string]any:
			if depth > shape.MaxDepth {
				continue
			}
			p.kinds |= kObject
			objs = append(objs, t)
		default:
			p.kinds |= kindOf(v)
		}
	}
	if len(elems) > 0 {
		if p.elem == nil {
			p.elem = &pathNode{path: p.path + "[]", field: p.field, steps: appendStep(p.steps, step{elem: true})}
		}
		b.add(p.elem, elems, depth+1)
	}
	if len(objs) == 0 || b.budget < 0 {
		return
	}
	p.objects += len(objs)
	if p.isMap = isMap(objs) || b.keyed(p, objs); p.isMap {
		var vals []any
		for _, o := range objs {
			for _, v := range o {
				vals = append(vals, v)
			}
		}
		p.vals = &pathNode{path: mapPath(p.path), field: p.field, steps: appendStep(p.steps, step{vals: true})}
		b.add(p.vals, vals, depth+1)
		return
	}
	byKey := map[string][]any{}
	for _, o := range objs {
		for k, v := range o {
			byKey[k] = append(byKey[k], v)
		}
	}
	p.children = make(map[string]*pathNode, len(byKey))
	for k, vs := range byKey {
		p.children[k] = &pathNode{path: keyPath(p.path, k), field: k, steps: appendStep(p.steps, step{key: k}), holder: p, present: len(vs)}
		b.add(p.children[k], vs, depth+1)
		if b.budget < 0 {
			return
		}
	}
}

// isMap reports whether the objects found at one position are a map, as
// shape.Of judges the objects it merges into one position: it owns the
// rule (see shape's Maps).
func isMap(objs []map[string]any) bool {
	l := make([]any, len(objs))
	for i, o := range objs {
		l[i] = o
	}
	return strings.HasPrefix(shape.Of(l).Summary(), "list<map<")
}

// keyed reports whether b's profile learned that the objects at p, which
// have keys, are a map (see shape's Keyed maps), as drift judges them. The
// positions above p are maps where the profile says so: they were decided
// first, so p's steps are the profile's.
func (b *posBuilder) keyed(p *pathNode, objs []map[string]any) bool {
	if b.profile == nil || !slices.ContainsFunc(objs, func(o map[string]any) bool { return len(o) > 0 }) {
		return false
	}
	path := make([]shape.Step, len(p.steps))
	for i, s := range p.steps {
		path[i] = shape.Step{Key: s.key, Elem: s.elem, Values: s.vals}
	}
	return b.profile.KeyedAt(path)
}

// appendStep returns steps with s appended, never sharing the result's
// array with another position.
func appendStep(steps []step, s step) []step {
	return append(steps[:len(steps):len(steps)], s)
}

// finish sorts the keys of every position and works out which keys the
// rule demonstrably does not read.
func (p *pathNode) finish(reads FieldSet) {
	p.keys = slices.Sorted(maps.Keys(p.children))
	looked := false // the rule reads some key of this object
	for _, k := range p.keys {
		if reads.Reads(k) {
			looked = true
			break
		}
	}
	for _, k := range p.keys {
		c := p.children[k]
		c.unread = p.unread
		if c.unread == "" && looked && !reads.Reads(k) {
			c.unread = k
		}
		c.finish(reads)
	}
	for _, c := range []*pathNode{p.elem, p.vals} {
		if c != nil {
			c.unread = p.unread
			c.finish(reads)
		}
	}
}

// firstObject returns the first position in walk order holding an object
// of named fields, or nil. A map is passed over: a key added to it is one
// more entry of its data, and a value unlike the others makes it no map.
func (p *pathNode) firstObject() *pathNode {
	if p.kinds&kObject != 0 && !p.isMap {
		return p
	}
	for _, k := range p.keys {
		if o := p.children[k].firstObject(); o != nil {
			return o
		}
	}
	for _, c := range []*pathNode{p.elem, p.vals} {
		if c == nil {
			continue
		}
		if o := c.firstObject(); o != nil {
			return o
		}
	}
	return nil
}

// generator yields the mutations of one base in walk order.
type generator struct {
	base    any
	budget  int
	yield   func(Mutation) bool
	control *pathNode
	count   int
	stopped bool
}

func (g *generator) walk(p *pathNode) {
	g.at(p)
	for _, k := range p.keys {
		if g.stopped {
			return
		}
		g.walk(p.children[k])
	}
	for _, c := range []*pathNode{p.elem, p.vals} {
		if c != nil && !g.stopped {
			g.walk(c)
		}
	}
}

// at yields the mutations of the path p, kinds in the order of the
// constants.
func (g *generator) at(p *pathNode) {
	mut := func(kind MutationKind, name string) Mutation {
		return Mutation{Name: string(kind) + " " + name, Kind: kind, Path: p.path, Field: p.field, unread: p.unread}
	}
	if p.kinds&kList != 0 {
		g.try(mut(MutWrapList, p.path), p.steps, g.wrapList)
	}
	if p.kinds&kObject != 0 {
		for _, k := range p.keys {
			c := p.children[k]
			if c.kinds&kList == 0 {
				continue
			}
			m := mut(MutUnwrapObject, p.path+" to "+c.path)
			m.Field, m.unread = k, c.unread
			g.try(m, p.steps, g.unwrap(k))
		}
	}
	// Keys the rule does not read get no key-level mutations: each would
	// survive as a harmless unread_field.
	keyed := p.holder != nil && p.unread == ""
	if keyed {
		m := mut(MutRemoveField, p.path)
		m.holder = p.holder.path
		g.try(m, p.holder.steps, g.removeKey(p.field))
	}
	if p.kinds&kNumber != 0 {
		m := mut(MutRetype, p.path+" number->string")
		m.from, m.to = "number", "string"
		g.try(m, p.steps, g.retype(kNumber, numberText))
		m = mut(MutRetype, p.path+" number->bool")
		m.from, m.to = "number", "bool"
		g.try(m, p.steps, g.retype(kNumber, func(any) any { return true }))
	}
	if p.kinds&kString != 0 {
		m := mut(MutRetype, p.path+" string->number")
		m.from, m.to = "string", "number"
		g.try(m, p.steps, g.retype(kString, func(any) any { return numberValue }))
	}
	if nonNull := p.kinds &^ kNull; nonNull != 0 {
		m := mut(MutRetype, p.path+" "+nonNull.String()+"->null")
		m.from, m.to = nonNull.String(), "null"
		g.try(m, p.steps, g.retype(nonNull, func(any) any { return nil }))
	}
	if p.nonEmpty {
		g.try(mut(MutEmptyList, p.path), p.steps, g.emptyList)
	}
	if p.elem != nil && p.elem.kinds&kObject != 0 {
		g.try(mut(MutNonObjectItems, p.path), p.steps, g.nonObjectItems)
	}
	if keyed {
		if p.kinds != 0 {
			// Only lists and objects too deep for a shape leave kinds
			// empty, and nesting them changes nothing a shape shows.
			g.try(mut(MutNestField, p.path), p.steps, g.nest)
		}
		if to := renamed(p.field); to != "" && p.holder.children[to] == nil {
			m := mut(MutRenameKey, p.path+" to "+shape.Key(to))
			m.to, m.holder = to, p.holder.path
			g.try(m, p.holder.steps, g.renameKey(p.field, to))
		}
	}
	if p == g.control {
		key := addedKey
		for i := 2; p.children[key] != nil; i++ {
			key = addedKey + "_" + strconv.Itoa(i)
		}
		m := mut(MutAddField, p.path)
		m.Field, m.unread = key, ""
		g.try(m, p.steps, g.addKey(key))
	}
}

// try applies change to every value at steps in a copy of the base and
// yields the mutation, unless the work budget or the cap is spent.
func (g *generator) try(m Mutation, steps []step, change func(any) (any, bool)) {
	if g.stopped {
		return
	}
	resp, changed := g.apply(g.base, steps, change)
	if g.budget < 0 {
		g.stopped = true
		return
	}
	if !changed {
		// Every path holds a value of the kind its mutations change, so
		// this cannot happen; a mutation that changes nothing would only
		// be reported as a survivor.
		return
	}
	m.Response = resp
	g.count++
	if !g.yield(m) || g.count >= MaxMutations {
		g.stopped = true
	}
}

// apply returns v with change applied to every value the steps lead to,
// copying only the lists and objects on the way; changed is false when
// nothing changed (v is then returned as it is).
func (g *generator) apply(v any, steps []step, change func(any) (any, bool)) (any, bool) {
	g.budget--
	if g.budget < 0 {
		return v, false
	}
	if len(steps) == 0 {
		return change(v)
	}
	s, rest := steps[0], steps[1:]
	if s.vals {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		var out map[string]any
		for _, k := range slices.Sorted(maps.Keys(m)) {
			nv, changed := g.apply(m[k], rest, change)
			if !changed {
				continue
			}
			if out == nil {
				out = g.copyMap(m, 0)
			}
			out[k] = nv
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	if s.elem {
		l, ok := v.([]any)
		if !ok {
			return v, false
		}
		var out []any
		for i, e := range l {
			ne, changed := g.apply(e, rest, change)
			if !changed {
				continue
			}
			if out == nil {
				out = g.copyList(l)
			}
			out[i] = ne
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	c, ok := m[s.key]
	if !ok {
		return v, false
	}
	nc, changed := g.apply(c, rest, change)
	if !changed {
		return v, false
	}
	out := g.copyMap(m, 0)
	out[s.key] = nc
	return out, true
}

func (g *generator) copyList(l []any) []any {
	g.budget -= len(l)
	return slices.Clone(l)
}

func (g *generator) copyMap(m map[string]any, extra int) map[string]any {
	g.budget -= len(m)
	out := make(map[string]any, len(m)+extra)
	maps.Copy(out, m)
	return out
}

func (g *generator) wrapList(v any) (any, bool) {
	if l, ok := v.([]any); ok {
		return map[string]any{wrapKey: l}, true
	}
	return v, false
}

func (g *generator) unwrap(key string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		if m, ok := v.(map[string]any); ok {
			if l, ok := m[key].([]any); ok {
				return l, true
			}
		}
		return v, false
	}
}

func (g *generator) removeKey(key string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		if _, ok := m[key]; !ok {
			return v, false
		}
		out := g.copyMap(m, 0)
		delete(out, key)
		return out, true
	}
}

func (g *generator) renameKey(from, to string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		x, ok := m[from]
		if !ok {
			return v, false
		}
		out := g.copyMap(m, 0)
		delete(out, from)
		out[to] = x
		return out, true
	}
}

func (g *generator) addKey(key string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		out := g.copyMap(m, 1)
		out[key] = addedValue
		return out, true
	}
}

func (g *generator) retype(kinds kindSet, to func(any) any) func(any) (any, bool) {
	return func(v any) (any, bool) {
		if kindOf(v)&kinds == 0 {
			return v, false
		}
		return to(v), true
	}
}

func (g *generator) emptyList(v any) (any, bool) {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return []any{}, true
	}
	return v, false
}

func (g *generator) nonObjectItems(v any) (any, bool) {
	l, ok := v.([]any)
	if !ok {
		return v, false
	}
	var out []any
	for i, e := range l {
		if _, ok := e.(map[string]any); !ok {
			continue
		}
		if out == nil {
			out = g.copyList(l)
		}
		out[i] = stringItem
	}
	if out == nil {
		return v, false
	}
	return out, true
}

func (g *generator) nest(v any) (any, bool) {
	return map[string]any{nestKey: v}, true
}

// numberText is a number's JSON text: 0.93 becomes "0.93".
func numberText(v any) any {
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	// Only infinities get here (a YAML .inf fixture); JSON has no text
	// for them.
	f, _ := v.(float64)
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// renamed returns the name a provider renaming key would likely give it:
// snake_case becomes camelCase, camelCase becomes snake_case, and any other
// key has the case of its first letter flipped ("score" becomes "Score").
// It returns "" when key has no letter case to change.
func renamed(key string) string {
	if s := snakeToCamel(key); s != key {
		return s
	}
	if s := camelToSnake(key); s != key {
		return s
	}
	r, size := utf8.DecodeRuneInString(key)
	var s string
	switch {
	case unicode.IsLower(r):
		s = string(unicode.ToUpper(r)) + key[size:]
	case unicode.IsUpper(r):
		s = string(unicode.ToLower(r)) + key[size:]
	}
	if s == key || r == utf8.RuneError {
		return ""
	}
	return s
}

// snakeToCamel drops each underscore that follows a character other than
// an underscore and precedes a lower-case ASCII letter, upper-casing the
// letter: next_cursor becomes nextCursor.
func snakeToCamel(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' && i > 0 && key[i-1] != '_' && i+1 < len(key) && 'a' <= key[i+1] && key[i+1] <= 'z' {
			b.WriteByte(key[i+1] - 'a' + 'A')
			i++
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// camelToSnake puts an underscore before each upper-case ASCII letter that
// follows a lower-case ASCII letter or a digit, lower-casing the letter:
// nextCursor becomes next_cursor.
func camelToSnake(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' && i > 0 && ('a' <= key[i-1] && key[i-1] <= 'z' || '0' <= key[i-1] && key[i-1] <= '9') {
			b.WriteByte('_')
			b.WriteByte(c - 'A' + 'a')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// mapPath is the path of the values of the map at path, written as
// shape.Diff writes it: "facets.*", "$.*" at the root.
func mapPath(path string) string { return path + ".*" }

// keyPath is the path of key below path, written as shape.Diff writes it.
func keyPath(path, key string) string {
	k := shape.Key(key)
	if path == "$" {
		return k
	}
	return path + "." + k
}
