package consumers

import (
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
