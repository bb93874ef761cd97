package runner

import (
	"reflect"

	"github.com/toolpulse/toolpulse/results"
)

// alertStates are the probes' alert states in memory, by probe. The
// recorder keeps one for every probe that ran, and a results.AlertState
// is some 300 bytes that a map stores out of line, although most probes'
// state is the one of a probe that passes: nothing but its name. Such a
// state is kept as nil and given back as it was put.
type alertStates map[string]*results.AlertState

// get returns probe's state, and whether there is one.
func (s alertStates) get(probe string) (results.AlertState, bool) {
	st, ok := s[probe]
	switch {
	case !ok:
		return results.AlertState{}, false
	case st == nil:
		return results.AlertState{Probe: probe}, true
	}
	return *st, true
}

// put makes st probe's state. A state at rest, the common one, is kept
// as nil, and only another is copied to the heap.
func (s alertStates) put(probe string, st results.AlertState) {
	if atRest(probe, st) {
		s[probe] = nil
		return
	}
	kept := st
	s[probe] = &kept
}

// atRest reports whether st is results.AlertState{Probe: probe}, every
// other field its zero value (nil slices and map, zero times), so that
// get can give it back as it was.
func atRest(probe string, st results.AlertState) bool {
	if st.Probe != probe {
		return false
	}
	st.Probe = ""
	return reflect.ValueOf(&st).Elem().IsZero()
}
