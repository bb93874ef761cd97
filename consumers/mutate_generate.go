package consumers

import (
	"maps"
	"slices"
	"strconv"

	"github.com/toolpulse/toolpulse/results/shape"
)

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
