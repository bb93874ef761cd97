package shape

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The stored form: JSON, with kinds by name, times in Unix milliseconds,
// and object keys in byte order (encoding/json sorts map keys), so that
// equal profiles have equal bytes.
type profileJSON struct {
	V       int        `json:"v"`
	Answers int        `json:"answers"`
	Last    int64      `json:"last"`
	Base    string     `json:"base,omitempty"`
	Root    *pnodeJSON `json:"root,omitempty"`
}

type statJSON struct {
	N    int   `json:"n"`
	Last int64 `json:"last"`
}

type pnodeJSON struct {
	Seen   statJSON              `json:"seen"`
	Kinds  map[string]statJSON   `json:"kinds,omitempty"`
	Fields map[string]pfieldJSON `json:"fields,omitempty"`
	Elem   *pnodeJSON            `json:"elem,omitempty"`
	Val    *pnodeJSON            `json:"map,omitempty"`
	Full   bool                  `json:"full,omitempty"`
	Keyed  bool                  `json:"keyed,omitempty"`
}

type pfieldJSON struct {
	Present statJSON   `json:"present"`
	Absent  *statJSON  `json:"absent,omitempty"`
	Partial *statJSON  `json:"partial,omitempty"`
	Shape   *pnodeJSON `json:"shape"`
}

func toStatJSON(s stat) statJSON {
	if s.n == 0 {
		return statJSON{}
	}
	return statJSON{N: int(s.n), Last: int64(s.last) * 1000}
}

func fromStatJSON(s statJSON) (stat, error) {
	if s.N < 0 {
		return stat{}, fmt.Errorf("negative count %d", s.N)
	}
	if s.N == 0 {
		return stat{}, nil
	}
	return stat{n: int32(min(s.N, maxStatCount)), last: statTime(time.UnixMilli(s.Last))}, nil
}

// MarshalJSON returns the stored form of p.
func (p *Profile) MarshalJSON() ([]byte, error) {
	out := profileJSON{V: profileVersion, Answers: p.answers, Base: p.base, Root: p.root.toJSON()}
	if !p.last.IsZero() {
		out.Last = p.last.UnixMilli()
	}
	return json.Marshal(out)
}

func (n *pnode) toJSON() *pnodeJSON {
	if n == nil {
		return nil
	}
	out := &pnodeJSON{Seen: toStatJSON(n.seen), Elem: n.elem.toJSON(), Val: n.val.toJSON(), Full: n.full, Keyed: n.keyed}
	for i := range nkinds {
		if s := n.kind(i); s.n > 0 {
			if out.Kinds == nil {
				out.Kinds = map[string]statJSON{}
			}
			out.Kinds[kindNames[i]] = toStatJSON(s)
		}
	}
	for _, f := range n.fields {
		if out.Fields == nil {
			out.Fields = make(map[string]pfieldJSON, len(n.fields))
		}
		pf := pfieldJSON{Present: toStatJSON(f.present), Shape: f.node.toJSON()}
		if f.absent.n > 0 {
			a := toStatJSON(f.absent)
			pf.Absent = &a
		}
		if f.partial.n > 0 {
			a := toStatJSON(f.partial)
			pf.Partial = &a
		}
		out.Fields[f.key] = pf
	}
	return out
}

// UnmarshalJSON reads the stored form MarshalJSON wrote. It refuses a
// version it does not know, an unknown kind name, negative counts, and
// nesting, keys per object or key lengths beyond what shapes keep.
func (p *Profile) UnmarshalJSON(b []byte) error {
	var in profileJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("shape: profile: %w", err)
	}
	if in.V != profileVersion {
		return fmt.Errorf("shape: profile: version %d, want %d", in.V, profileVersion)
	}
	if in.Answers < 0 {
		return errors.New("shape: profile: negative answers")
	}
	root, err := fromJSON(in.Root, 1)
	if err != nil {
		return fmt.Errorf("shape: profile: %w", err)
	}
	// A profile stored before MaxProfilePositions may hold more: it is
	// kept, and learns no new position until forgetting brings it under.
	*p = Profile{answers: in.Answers, base: in.Base, root: root, positions: root.count()}
	if in.Last != 0 {
		p.last = time.UnixMilli(in.Last).UTC()
	}
	return nil
}

func fromJSON(in *pnodeJSON, depth int) (*pnode, error) {
	if in == nil {
		return nil, nil
	}
	if depth > MaxDepth+1 {
		return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth+1)
	}
	n := &pnode{full: in.Full, keyed: in.Keyed}
	var err error
	if n.seen, err = fromStatJSON(in.Seen); err != nil {
		return nil, err
	}
	for name, s := range in.Kinds {
		i := slices.Index(kindNames[:], name)
		if i < 0 {
			return nil, fmt.Errorf("unknown kind %q", name)
		}
		st, err := fromStatJSON(s)
		if err != nil {
			return nil, err
		}
		n.setKind(i, st)
	}
	if len(in.Fields) > MaxKeys {
		return nil, fmt.Errorf("%d fields, more than %d", len(in.Fields), MaxKeys)
	}
	for k, f := range in.Fields {
		if len(k) > MaxKeyBytes {
			return nil, fmt.Errorf("key of %d bytes, longer than %d", len(k), MaxKeyBytes)
		}
		pf := pfield{key: k}
		if pf.present, err = fromStatJSON(f.Present); err != nil {
			return nil, err
		}
		if f.Absent != nil {
			if pf.absent, err = fromStatJSON(*f.Absent); err != nil {
				return nil, err
			}
		}
		if f.Partial != nil {
			if pf.partial, err = fromStatJSON(*f.Partial); err != nil {
				return nil, err
			}
		}
		if pf.node, err = fromJSON(f.Shape, depth+1); err != nil {
			return nil, err
		}
		if pf.node == nil {
			pf.node = &pnode{}
		}
		n.fields = append(n.fields, pf)
	}
	slices.SortFunc(n.fields, func(a, b pfield) int { return strings.Compare(a.key, b.key) })
	if n.elem, err = fromJSON(in.Elem, depth+1); err != nil {
		return nil, err
	}
	if n.val, err = fromJSON(in.Val, depth+1); err != nil {
		return nil, err
	}
	return n, nil
}
