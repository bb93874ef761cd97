package shape

// Diff returns one line per changed path between two shapes, in the wording
// of SPEC §5, or nil when they are equal:
//
//	results: list<object(3 keys)> -> object(1 keys)
//	results[].score: number -> number|string
//	results[].title: removed (string)
//	next_cursor: added (string)
//
// Paths are dotted from the root: a key below the root is its own path
// ("results"), a key below another path is "path.key" ("a.b"), and the
// elements of a list are "path[]" ("results[].score"). The root itself is
// "$", so a root list's elements are "$[]"; the values of a map are
// "path.*" ("facets.*.count", "$.*" at the root). A key that String would quote
// is quoted the same way: the key x.y below a is a."x.y".
//
// Where the kinds at a path differ, Diff writes one line with both summaries
// and does not descend; a union is one kind set, so number -> number|string
// is one line, and list<empty> and a non-empty list count as different
// kinds. Where the kinds are the same, Diff descends into the object part
// (a key only in to is "added", only in from is "removed", a key that only
// one of them marks optional "became optional" or "became required", each
// with its summary) and into the list elements. An object that kept only MaxKeys keys
// says nothing about the keys after its last kept one, so those are not
// reported as added or removed; a change in its key count is a line of its
// own ("a: object(300 keys) -> object(301 keys)").
//
// Lines are in path order: a path before the paths below it, keys in byte
// order, then a list's elements. A zero Shape has the summary "none".
func Diff(from, to Shape) []string {
	var d differ
	d.diff("", from.root, to.root)
	return d.lines
}

type differ struct {
	lines []string
}

func (d *differ) line(path, text string) {
	if path == "" {
		path = "$"
	}
	d.lines = append(d.lines, path+": "+text)
}

func (d *differ) diff(path string, a, b *node) {
	if equal(a, b) {
		return
	}
	if a == nil || b == nil || signature(a) != signature(b) {
		d.line(path, summary(a)+" -> "+summary(b))
		return
	}
	if a.kinds&kindObject != 0 {
		d.object(path, a, b)
	}
	if a.elem != nil {
		elems := path
		if elems == "" {
			elems = "$"
		}
		d.diff(elems+"[]", a.elem, b.elem)
	}
	if a.val != nil {
		d.diff(mapPath(path), a.val, b.val)
	}
}

// mapPath is the path of the values of the map at path: "facets.*", or
// "$.*" for a map at the root. '*' is never a bare key, so no key's path
// reads the same.
func mapPath(path string) string {
	if path == "" {
		return "$.*"
	}
	return path + ".*"
}

func (d *differ) object(path string, a, b *node) {
	if (a.truncated() || b.truncated()) && a.nkeys != b.nkeys {
		d.line(path, summary(a)+" -> "+summary(b))
	}
	i, j := 0, 0
	for i < len(a.fields) || j < len(b.fields) {
		switch {
		case j == len(b.fields) || i < len(a.fields) && a.fields[i].key < b.fields[j].key:
			f := a.fields[i]
			i++
			if !unknown(b, f.key) {
				d.line(keyPath(path, f.key), "removed ("+summary(f.shape)+")")
			}
		case i == len(a.fields) || b.fields[j].key < a.fields[i].key:
			f := b.fields[j]
			j++
			if !unknown(a, f.key) {
				d.line(keyPath(path, f.key), "added ("+summary(f.shape)+")")
			}
		default:
			fa, fb := a.fields[i], b.fields[j]
			if fa.optional != fb.optional {
				became := "became optional ("
				if !fb.optional {
					became = "became required ("
				}
				d.line(keyPath(path, fa.key), became+summary(fb.shape)+")")
			}
			d.diff(keyPath(path, fa.key), fa.shape, fb.shape)
			i++
			j++
		}
	}
}

// unknown reports whether n's object part cannot tell if it has key: it
// lost keys to MaxKeys and key sorts after the last one it kept.
func unknown(n *node, key string) bool {
	return n.truncated() && key > n.fields[len(n.fields)-1].key
}

func keyPath(path, key string) string {
	k := string(appendKey(nil, key))
	if path == "" {
		return k
	}
	return path + "." + k
}

// signature is what Diff compares before it descends: the kind set, with
// list<empty> told apart from a list with elements.
func signature(n *node) uint32 {
	s := uint32(n.kinds)
	if n.kinds&kindList != 0 && n.elem == nil {
		s |= 1 << 16
	}
	return s
}

func equal(a, b *node) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.kinds != b.kinds || a.nkeys != b.nkeys || len(a.fields) != len(b.fields) {
		return false
	}
	for i := range a.fields {
		if a.fields[i].key != b.fields[i].key || a.fields[i].optional != b.fields[i].optional ||
			!equal(a.fields[i].shape, b.fields[i].shape) {
			return false
		}
	}
	if (a.elem == nil) != (b.elem == nil) || (a.val == nil) != (b.val == nil) {
		return false
	}
	return (a.elem == nil || equal(a.elem, b.elem)) && (a.val == nil || equal(a.val, b.val))
}
