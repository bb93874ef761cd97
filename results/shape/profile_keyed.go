package shape

import "slices"

// # Keyed maps
//
// Of collapses an object into a map when one answer shows that its keys
// are data (see Maps). Keys of another form ("doc_784", slugs) can only be
// told from names across answers: at an object position that two or more
// answers showed, when at least keyedMinKeys of its keys, and at least half
// of them, were each seen in one answer only, and every key's values have
// had the same kinds (nulls aside), the keys are data. The position is
// keyed from then on: its fields merge into the map's values, and its
// objects are judged and learned as maps (Canonical writes them so, for a
// fingerprint that stays the same from one answer to the next).
const keyedMinKeys = 3

// churns reports whether the object part of n shows keys that are data.
func churns(n *pnode) bool {
	if n.keyed || n.kind(kindIndex(kindObject)).n < 2 || len(n.fields) < keyedMinKeys {
		return false
	}
	once := 0
	var want [nkinds]bool
	first := true
	for i := range n.fields {
		f := &n.fields[i]
		if f.present.n == 1 {
			once++
		}
		var got [nkinds]bool
		for i := range nkinds {
			got[i] = f.node.kind(i).n > 0 && i != kindIndex(kindNull)
		}
		if got == ([nkinds]bool{}) {
			continue
		}
		if first {
			want, first = got, false
		} else if got != want {
			return false
		}
	}
	return once >= keyedMinKeys && 2*once >= len(n.fields)
}

// toMap turns the object part of n into a map part whose values are the
// merge of its fields.
func (l *learner) toMap(n *pnode) {
	if n.val == nil {
		n.val = &pnode{}
	}
	for i := range n.fields {
		mergeProfile(n.val, n.fields[i].node)
	}
	o, m := kindIndex(kindObject), kindIndex(kindMap)
	n.setKind(m, addStat(n.kind(m), n.kind(o)))
	n.setKind(o, stat{})
	n.fields, n.full, n.keyed = nil, false, true
	l.changed = true
}

func addStat(a, b stat) stat {
	return stat{n: int32(min(int64(a.n)+int64(b.n), maxStatCount)), last: max(a.last, b.last)}
}

// mergeProfile adds src's counts into dst, position by position. Where
// both had objects, a field only one of them had is partial: the values of
// a map that had it and those that did not are now one position.
func mergeProfile(dst, src *pnode) {
	o := kindIndex(kindObject)
	if dst.kind(o).n > 0 && src.kind(o).n > 0 {
		markPartial(dst.fields, src.fields, src.kind(o).last)
		markPartial(src.fields, dst.fields, dst.kind(o).last)
	}
	dst.seen = addStat(dst.seen, src.seen)
	for i := range nkinds {
		dst.setKind(i, addStat(dst.kind(i), src.kind(i)))
	}
	for i := range src.fields {
		f := &src.fields[i]
		d := dst.fields.get(f.key)
		if d == nil {
			if len(dst.fields) >= MaxKeys {
				dst.full = true
				continue
			}
			d = dst.fields.add(f.key)
		}
		d.present, d.absent = addStat(d.present, f.present), addStat(d.absent, f.absent)
		d.partial = addStat(d.partial, f.partial)
		mergeProfile(d.node, f.node)
	}
	if src.elem != nil {
		if dst.elem == nil {
			dst.elem = &pnode{}
		}
		mergeProfile(dst.elem, src.elem)
	}
	if src.val != nil {
		if dst.val == nil {
			dst.val = &pnode{}
		}
		mergeProfile(dst.val, src.val)
	}
	dst.full = dst.full || src.full
	dst.keyed = dst.keyed || src.keyed
}

// markPartial counts one partial answer, at at, for every field of a that
// b lacks.
func markPartial(a, b pfields, at uint32) {
	for i := range a {
		if f := &a[i]; b.get(f.key) == nil {
			f.partial = addStat(f.partial, stat{n: 1, last: at})
		}
	}
}

// keyedToMap returns s with its object part, when it has keys, merged
// into its map part: how an object at a keyed position is judged.
func keyedToMap(s *node) *node {
	if s.kinds&kindObject == 0 || len(s.fields) == 0 {
		return s
	}
	val := &node{}
	if s.val != nil {
		merge(val, s.val, 1)
	}
	for _, f := range s.fields {
		merge(val, f.shape, 1)
	}
	return &node{kinds: s.kinds&^kindObject | kindMap, elem: s.elem, val: val}
}

// Step is one step from a position of a shape down to another: a key of
// an object, the elements of a list (Elem), or the values of a map
// (Values).
type Step struct {
	Key          string
	Elem, Values bool
}

// KeyedAt reports whether p learned that the objects at the position path
// leads to, from the root, are a map: their keys are data (see Keyed
// maps). A position above it that p learned is keyed is reached by a
// Values step, as Canonical writes it.
func (p *Profile) KeyedAt(path []Step) bool {
	n := p.root
	for _, s := range path {
		if n == nil {
			return false
		}
		switch {
		case s.Elem:
			n = n.elem
		case s.Values:
			n = n.val
		default:
			f := n.fields.get(s.Key)
			if f == nil {
				return false
			}
			n = f.node
		}
	}
	return n != nil && n.keyed
}

// Canonical returns s as p judges it: with the objects at keyed positions
// written as maps, so that their fingerprint does not change with their
// keys. It is s itself when p has no keyed position s reaches.
func (p *Profile) Canonical(s Shape) Shape {
	if s.root == nil || p.root == nil {
		return s
	}
	if n, changed := canonical(p.root, s.root, 1); changed {
		return newShape(n)
	}
	return s
}

func canonical(n *pnode, s *node, depth int) (*node, bool) {
	if n == nil || depth > MaxDepth {
		return s, false
	}
	changed := false
	if n.keyed {
		if m := keyedToMap(s); m != s {
			s, changed = m, true
		}
	}
	var fields []field
	if s.kinds&kindObject != 0 && len(s.fields) > 0 {
		for i, f := range s.fields {
			pf := n.fields.get(f.key)
			if pf == nil {
				continue
			}
			if fs, ok := canonical(pf.node, f.shape, depth+1); ok {
				if fields == nil {
					fields = slices.Clone(s.fields)
				}
				fields[i].shape = fs
			}
		}
	}
	elem, val := s.elem, s.val
	if elem != nil {
		if e, ok := canonical(n.elem, elem, depth+1); ok {
			elem, changed = e, true
		}
	}
	if val != nil {
		if v, ok := canonical(n.val, val, depth+1); ok {
			val, changed = v, true
		}
	}
	if fields == nil && !changed {
		return s, false
	}
	// Copied only when something changed: most answers have no keyed
	// position, and their nodes are left as they are.
	c := *s
	if fields != nil {
		c.fields = fields
	}
	c.elem, c.val = elem, val
	return &c, true
}
