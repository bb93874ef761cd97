package shape

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// # Profiles
//
// A Profile is what a probe's answers have shown, path by path (SPEC §5):
// the kinds seen at each path, whether each field of an object is always
// there or sometimes absent, the merged shape of list elements and of map
// values. It is the baseline drift is judged against.
//
// Every feature of it (a kind at a path, a field being there, a field
// being absent) counts the answers that showed it and remembers when one
// last did. A feature is part of the profile, learned, once
// ProfileVariantAnswers answers showed it; one answer is not enough, so a
// single malformed answer is never learned as normal. A feature no answer
// showed for ProfileWindow is forgotten, and a profile with no answer for
// that long starts over. A profile is established, and judges answers,
// once ProfileWarmup answers built it.
//
// An answer drifts (Check) when it shows a kind at a path that is not
// learned there, a field that is not learned, or lacks a field the profile
// learned as always there. A field is sometimes absent once
// ProfileVariantAnswers answers lacked it, or once one answer had it in
// some of the objects merged at its position and not in others (an
// optional field of a list's elements: see pfield). An empty list says nothing about its elements
// and an empty object nothing about a map's values, so they fit any; the
// elements of a list (the values of a map) are judged only once
// ProfileVariantAnswers answers showed some. A drift is novel when it
// shows a feature no answer ever showed (in the window): that is the
// answer a real change is announced on, once. An answer that repeats a
// variant seen before but not yet learned still drifts, but is not novel.
const (
	// ProfileWarmup is how many answers establish a profile.
	ProfileWarmup = 5
	// ProfileVariantAnswers is how many answers must show a variant
	// before it is part of the profile.
	ProfileVariantAnswers = 2
	// ProfileWindow is how long a feature no answer showed stays learned.
	ProfileWindow = 24 * time.Hour
	// MaxProfilePositions is the most positions (paths: the root, each
	// field, list elements and map values) a profile keeps. Past it, like
	// an object past MaxKeys, it learns no new position: an answer's
	// fields it does not keep are neither known nor new, so a provider
	// that brings new structure with every answer cannot grow it, nor its
	// stored form, without bound.
	MaxProfilePositions = 1 << 13
)

// profileVersion is the version of the stored form (MarshalJSON).
const profileVersion = 1

// Profile is a probe's learned shape baseline. The zero Profile is empty
// and ready to Learn. A Profile is not safe for concurrent use; Clone it
// to hand a copy to another goroutine.
type Profile struct {
	answers int       // answers learned since the profile (re)started
	last    time.Time // the latest answer learned
	base    string    // fingerprint of the latest answer that fitted
	root    *pnode
	// positions counts the pnodes under root, root included: exact after
	// forgetting and reading the stored form, at least the true count in
	// between (keyed maps merge positions away). Not stored.
	positions int
	// forgotAt is when forgetting last ran: at most every forgetEvery,
	// since forgetting walks the whole profile and a minute more or less
	// of a 24-hour window changes nothing. Not stored.
	forgotAt time.Time
}

// forgetEvery is how often Observe forgets what is older than
// ProfileWindow.
const forgetEvery = time.Minute

// stat counts the answers that showed a feature, and when the last did.
// A profile holds a stat for every kind of every position and three for
// every field, and the runner keeps a profile per probe in memory, so a
// stat is 8 bytes without pointers: the time in whole Unix seconds (the
// 24-hour window needs no finer; the stored form keeps milliseconds,
// profile_json.go), the count stopping at maxStatCount.
type stat struct {
	n    int32
	last uint32 // Unix seconds
}

// maxStatCount is where a stat stops counting.
const maxStatCount = 1 << 30

// statTime returns at as a stat's time: Unix seconds, clamped to what
// a uint32 holds (1970 to 2106).
func statTime(at time.Time) uint32 {
	return uint32(min(max(at.Unix(), 0), math.MaxUint32))
}

func (s stat) learned() bool { return s.n >= ProfileVariantAnswers }

func (s *stat) see(at uint32) {
	if s.n < maxStatCount {
		s.n++
	}
	if at > s.last {
		s.last = at
	}
}

// pnode is one position of a profile.
type pnode struct {
	seen stat // answers with a value at this position
	// kinds are the stats of the kinds in kindSet, in bit order: kinds
	// no answer showed have none, and most positions only ever see one
	// of the eight (read them with kind).
	kinds   []stat
	kindSet kind
	fields  pfields // object part
	elem    *pnode  // list elements; nil until an answer had some
	val     *pnode  // map values; nil until an answer had a map
	// full says that fields reached MaxKeys (or the profile
	// MaxProfilePositions) and an answer's key was left out: like a
	// truncated object, the profile cannot tell whether a key it does
	// not keep is new.
	full bool
	// keyed says that the keys of the objects here turned out to be data
	// (see Keyed maps): they are judged, and learned, as maps.
	keyed bool
}

// kindSlot returns where the stat of kind index i is in n.kinds, and
// whether n has one.
func (n *pnode) kindSlot(i int) (int, bool) {
	bit := kind(1) << i
	return bits.OnesCount16(uint16(n.kindSet & (bit - 1))), n.kindSet&bit != 0
}

// kind returns the stat of kind index i; zero if no answer showed it.
func (n *pnode) kind(i int) stat {
	if j, ok := n.kindSlot(i); ok {
		return n.kinds[j]
	}
	return stat{}
}

// setKind sets the stat of kind index i; a zero stat drops it.
func (n *pnode) setKind(i int, s stat) {
	j, ok := n.kindSlot(i)
	switch {
	case ok && s == stat{}:
		n.kinds = slices.Delete(n.kinds, j, j+1)
		n.kindSet &^= kind(1) << i
	case ok:
		n.kinds[j] = s
	case s != stat{}:
		n.kinds = slices.Insert(n.kinds, j, s)
		n.kindSet |= kind(1) << i
	}
}

// pfield is the field key of an object position: the answers that had it, those
// that lacked it, and those that had it in some of their objects only
// (partial: the elements of a list, or the values of a map, that merge
// into one object, some with the field and some without). One partial
// answer is enough to learn the field as optional: the same answer showed
// it both ways, so its absence is not one malformed answer.
type pfield struct {
	key                      string
	present, absent, partial stat
	node                     *pnode
}

// pfields are the fields of an object position, sorted by key. The runner
// keeps a profile per probe in memory, and for the few keys of most
// objects a sorted slice of values is much smaller than a map of pointers
// (BENCHMARKS.md, "10,000 probes: peak RSS").
type pfields []pfield

// find returns the index of key, or where it would go, and whether it is
// there.
func (fs pfields) find(key string) (int, bool) {
	return slices.BinarySearchFunc(fs, key, func(f pfield, k string) int { return strings.Compare(f.key, k) })
}

// get returns the field key, or nil. The pointer is good until fs changes.
func (fs pfields) get(key string) *pfield {
	if i, ok := fs.find(key); ok {
		return &fs[i]
	}
	return nil
}

// add inserts key, which fs lacks, with an empty position, and returns it.
// The pointer is good until fs changes again.
func (fs *pfields) add(key string) *pfield {
	i, _ := fs.find(key)
	*fs = slices.Insert(*fs, i, pfield{key: key, node: &pnode{}})
	return &(*fs)[i]
}

// optional reports whether the field is learned as sometimes absent.
func (f *pfield) optional() bool { return f.absent.learned() || f.partial.n > 0 }

const nkinds = 8

// Answers returns how many answers the profile learned from since it
// started (or started over).
func (p *Profile) Answers() int { return p.answers }

// Established reports whether the profile has learned from enough answers
// to judge one.
func (p *Profile) Established() bool { return p.answers >= ProfileWarmup }

// Base returns the fingerprint of the latest answer that fitted the
// profile (every answer of the warm-up fits it), or "".
func (p *Profile) Base() string { return p.base }

// Last returns when the profile last learned an answer; zero for an
// empty profile.
func (p *Profile) Last() time.Time { return p.last }

// Clone returns a deep copy of p.
func (p *Profile) Clone() *Profile {
	c := *p
	c.root = p.root.clone()
	return &c
}

func (n *pnode) clone() *pnode {
	if n == nil {
		return nil
	}
	c := *n
	c.kinds = slices.Clone(n.kinds)
	if n.fields != nil {
		c.fields = slices.Clone(n.fields)
		for i := range c.fields {
			c.fields[i].node = c.fields[i].node.clone()
		}
	}
	c.elem, c.val = n.elem.clone(), n.val.clone()
	return &c
}

// Observe judges the answer of shape s, seen at at, against the profile
// (Check), then learns it and forgets what no answer showed in
// ProfileWindow before at. changed reports whether more than counts
// changed: a feature was seen for the first time, joined the profile or
// left it, the profile became established, or it started over after
// ProfileWindow without an answer. A store must keep every such change, or
// a restart would take a variant already announced for novel again. A zero
// s changes nothing.
func (p *Profile) Observe(s Shape, at time.Time) (r Report, changed bool) {
	if s.root == nil {
		return Report{}, false
	}
	if p.root != nil && at.Sub(p.last) >= ProfileWindow {
		*p = Profile{}
		changed = true
	}
	if p.root == nil {
		p.root, p.positions = &pnode{}, 1
	}
	r = p.Check(s)
	return r, p.learnAnswer(s, at, len(r.Lines) == 0) || changed
}

// LearnFit learns the answer of shape s, seen at at, that the caller knows
// fits the profile (its fingerprint is Base, and the profile is
// established), without judging it again: the common run's cheap path. It
// reports what Observe's changed does. On an answer that does not fit it
// is Learn, without the judgement: the profile learns it all the same.
func (p *Profile) LearnFit(s Shape, at time.Time) (changed bool) {
	if s.root == nil {
		return false
	}
	if p.root == nil || at.Sub(p.last) >= ProfileWindow {
		return p.Learn(s, at)
	}
	return p.learnAnswer(s, at, true)
}

// learnAnswer counts the answer, learns its shape and forgets what is
// old; fits says whether it fitted, making it the new Base.
func (p *Profile) learnAnswer(s Shape, at time.Time, fits bool) bool {
	p.answers++
	if at.After(p.last) {
		p.last = at
	}
	if fits {
		p.base = s.Fingerprint()
	}
	l := learner{at: statTime(at), left: MaxProfilePositions - p.positions}
	l.learn(p.root, s.root, 1)
	p.positions = MaxProfilePositions - l.left
	if p.forgotAt.IsZero() || at.Sub(p.forgotAt) >= forgetEvery || at.Before(p.forgotAt) {
		p.forgotAt = at
		l.forget(p.root, statTime(at.Add(-ProfileWindow)))
		p.positions = p.root.count()
	}
	return l.changed || p.answers == ProfileWarmup
}

// Learn is Observe without the judgement.
func (p *Profile) Learn(s Shape, at time.Time) (changed bool) {
	_, changed = p.Observe(s, at)
	return changed
}

// learner learns one answer, and notes whether a feature was seen for the
// first time (what makes the next answer showing it not novel), crossed
// into the profile, or left it.
type learner struct {
	at      uint32 // statTime
	changed bool
	// left is how many new positions the profile may still take.
	left int
}

// count returns the number of positions of n, n included.
func (n *pnode) count() int {
	if n == nil {
		return 0
	}
	c := 1 + n.elem.count() + n.val.count()
	for i := range n.fields {
		c += n.fields[i].node.count()
	}
	return c
}

func (l *learner) see(s *stat) {
	s.see(l.at)
	if s.n == 1 || s.n == ProfileVariantAnswers {
		l.changed = true
	}
}

func (l *learner) learn(n *pnode, s *node, depth int) {
	if n.keyed {
		s = keyedToMap(s)
	}
	l.see(&n.seen)
	for i, k := 0, kind(1); k < kindEnd; i, k = i+1, k<<1 {
		if s.kinds&k != 0 {
			st := n.kind(i)
			l.see(&st)
			n.setKind(i, st)
		}
	}
	if depth > MaxDepth {
		return
	}
	if s.kinds&kindObject != 0 {
		for _, f := range s.fields {
			pf := n.fields.get(f.key)
			if pf == nil {
				if len(n.fields) >= MaxKeys || l.left <= 0 {
					n.full = true
					continue
				}
				pf = n.fields.add(f.key)
				l.left--
			}
			l.see(&pf.present)
			if f.optional {
				l.see(&pf.partial)
			}
			l.learn(pf.node, f.shape, depth+1)
		}
		for i := range n.fields {
			if pf := &n.fields[i]; !has(s, pf.key) && !unknown(s, pf.key) {
				l.see(&pf.absent)
			}
		}
		if churns(n) {
			l.toMap(n)
		}
	}
	if s.kinds&kindList != 0 && s.elem != nil && (n.elem != nil || l.left > 0) {
		if n.elem == nil {
			n.elem = &pnode{}
			l.left--
		}
		l.learn(n.elem, s.elem, depth+1)
	}
	if s.kinds&kindMap != 0 && s.val != nil && (n.val != nil || l.left > 0) {
		if n.val == nil {
			n.val = &pnode{}
			l.left--
		}
		l.learn(n.val, s.val, depth+1)
	}
}

// forget zeroes every count of n whose last answer came before cutoff and
// drops the positions left with none. It reports whether n itself is left
// empty.
func (l *learner) forget(n *pnode, cutoff uint32) (empty bool) {
	old := func(s *stat) {
		if s.n > 0 && s.last < cutoff {
			l.changed = l.changed || s.learned()
			*s = stat{}
		}
	}
	old(&n.seen)
	for i := range nkinds {
		st := n.kind(i)
		old(&st)
		n.setKind(i, st)
	}
	kept := n.fields[:0]
	for _, f := range n.fields {
		old(&f.present)
		old(&f.absent)
		old(&f.partial)
		if l.forget(f.node, cutoff) && f.present.n == 0 {
			continue
		}
		kept = append(kept, f)
	}
	clear(n.fields[len(kept):])
	n.fields = kept
	if n.elem != nil && l.forget(n.elem, cutoff) {
		n.elem = nil
	}
	if n.val != nil && l.forget(n.val, cutoff) {
		n.val = nil
	}
	return n.seen.n == 0
}

// has reports whether the object part of s keeps key.
func has(s *node, key string) bool {
	_, ok := slices.BinarySearchFunc(s.fields, key, func(f field, k string) int {
		switch {
		case f.key < k:
			return -1
		case f.key > k:
			return 1
		}
		return 0
	})
	return ok
}

// Report is what Check found.
type Report struct {
	// Lines are the diff lines from the profile to the answer, in the
	// wording of SPEC §5 and Diff; nil when the answer fits.
	Lines []string
	// Novel says that the answer shows a feature no answer showed before
	// (a kind, a field, or the absence of a field always there): a real
	// change's first answer.
	Novel bool
}

// Check judges the answer of shape s against what p has learned, without
// changing p. It finds nothing for a zero s and before p is established.
//
// Where the kinds at a path are not all learned there, one line gives the
// learned kinds and the answer's ("results: list<object(3 keys)> ->
// object(1 keys)", "next_cursor: null|string -> number") and Check does not
// descend; otherwise a field that is not learned is "added", a field
// learned as always there that the answer lacks is "removed" with its
// learned summary, and Check descends into fields, list elements and map
// values. Lines are in Diff's path order.
func (p *Profile) Check(s Shape) Report {
	var c checker
	if s.root == nil || p.root == nil || !p.Established() {
		return Report{}
	}
	c.check("", p.root, s.root, 1)
	return Report{Lines: c.lines, Novel: c.novel}
}

type checker struct {
	lines []string
	novel bool
}

func (c *checker) line(path, text string, novel bool) {
	if path == "" {
		path = "$"
	}
	c.lines = append(c.lines, path+": "+text)
	c.novel = c.novel || novel
}

func (c *checker) check(path string, n *pnode, s *node, depth int) {
	if n.keyed {
		s = keyedToMap(s)
	}
	var unlearned, unseen bool
	for i, k := 0, kind(1); k < kindEnd; i, k = i+1, k<<1 {
		if s.kinds&k == 0 || n.kind(i).learned() {
			continue
		}
		if k == kindObject && len(s.fields) == 0 && !s.truncated() && n.kind(kindIndex(kindMap)).learned() {
			continue // an empty object is an empty map
		}
		unlearned = true
		unseen = unseen || n.kind(i).n == 0
	}
	if unlearned {
		c.line(path, summary(n.learnedNode(depth))+" -> "+summary(s), unseen)
		return
	}
	if depth > MaxDepth {
		return
	}
	if s.kinds&kindObject != 0 && n.kind(kindIndex(kindObject)).learned() {
		c.object(path, n, s, depth)
	}
	if s.kinds&kindList != 0 && s.elem != nil && n.elem != nil && n.elem.seen.learned() {
		elems := path
		if elems == "" {
			elems = "$"
		}
		c.check(elems+"[]", n.elem, s.elem, depth+1)
	}
	if s.kinds&kindMap != 0 && n.val != nil && n.val.seen.learned() {
		c.check(mapPath(path), n.val, s.val, depth+1)
	}
}

func (c *checker) object(path string, n *pnode, s *node, depth int) {
	keys := make([]string, 0, len(n.fields)+len(s.fields))
	for i := range n.fields {
		keys = append(keys, n.fields[i].key)
	}
	for _, f := range s.fields {
		if n.fields.get(f.key) == nil {
			keys = append(keys, f.key)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		pf := n.fields.get(k)
		i, found := slices.BinarySearchFunc(s.fields, k, func(f field, k string) int {
			switch {
			case f.key < k:
				return -1
			case f.key > k:
				return 1
			}
			return 0
		})
		switch {
		case found && pf == nil && n.full:
			// Not kept: neither known nor new.
		case found && (pf == nil || !pf.present.learned()):
			c.line(keyPath(path, k), "added ("+summary(s.fields[i].shape)+")", pf == nil || pf.present.n == 0)
		case found:
			c.check(keyPath(path, k), pf.node, s.fields[i].shape, depth+1)
		case pf.present.learned() && !pf.optional() && !unknown(s, k):
			c.line(keyPath(path, k), "removed ("+summary(pf.node.learnedNode(depth+1))+")", pf.absent.n == 0)
		}
	}
}

// kindIndex is the index of the single kind k in pnode.kinds.
func kindIndex(k kind) int {
	i := 0
	for k > 1 {
		k >>= 1
		i++
	}
	return i
}

// learnedNode returns the shape of what n has learned: its learned kinds,
// fields learned as present, and learned elements and values; nil when it
// learned no kind.
func (n *pnode) learnedNode(depth int) *node {
	if n == nil {
		return nil
	}
	out := &node{}
	for i, k := 0, kind(1); k < kindEnd; i, k = i+1, k<<1 {
		if n.kind(i).learned() {
			out.kinds |= k
		}
	}
	if out.kinds == 0 {
		return nil
	}
	if depth > MaxDepth {
		return out
	}
	if out.kinds&kindObject != 0 {
		for i := range n.fields {
			f := &n.fields[i]
			if !f.present.learned() {
				continue
			}
			c := f.node.learnedNode(depth + 1)
			if c == nil {
				continue
			}
			out.fields = append(out.fields, field{key: f.key, shape: c, optional: f.optional()})
		}
		out.nkeys = len(out.fields)
	}
	if out.kinds&kindList != 0 && n.elem != nil && n.elem.seen.learned() {
		out.elem = n.elem.learnedNode(depth + 1)
	}
	if out.kinds&kindMap != 0 {
		out.val = n.val.learnedNode(depth + 1)
		if out.val == nil {
			out.val = &node{kinds: kindDeep}
		}
	}
	return out
}

// Learned returns the shape of what p has learned, the union of the
// variants it accepts (its canonical text and fingerprint name it); the
// zero Shape when it learned nothing.
func (p *Profile) Learned() Shape {
	if p.root == nil {
		return Shape{}
	}
	n := p.root.learnedNode(1)
	if n == nil {
		return Shape{}
	}
	return newShape(n)
}
