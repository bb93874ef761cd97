package consumers

import (
	"maps"
	"slices"
	"strings"

	"github.com/toolpulse/toolpulse/results/shape"
)

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
