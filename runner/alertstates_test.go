package runner

import (
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestAlertStatesKeepEveryField: a state is given back as it was put,
// whichever of its fields is set; only the state of a probe at rest (its
// name alone) is kept without a copy of its own.
func TestAlertStatesKeepEveryField(t *testing.T) {
	s := alertStates{}
	if _, ok := s.get("search"); ok {
		t.Fatal("a probe never put has a state")
	}
	s.put("search", results.AlertState{Probe: "search"})
	if st, ok := s.get("search"); !ok || !reflect.DeepEqual(st, results.AlertState{Probe: "search"}) {
		t.Errorf("at rest: got %+v, %v", st, ok)
	}
	if s["search"] != nil {
		t.Error("a state at rest is kept as a copy of its own")
	}
	// Under another probe's name it is not the same state.
	s.put("other", results.AlertState{Probe: "search"})
	if st, _ := s.get("other"); st.Probe != "search" {
		t.Errorf("state put under another name came back as %+v", st)
	}

	typ := reflect.TypeFor[results.AlertState]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Probe" {
			continue
		}
		st := results.AlertState{Probe: "search"}
		setNonZero(t, reflect.ValueOf(&st).Elem().Field(i), f.Name)
		s.put("search", st)
		got, ok := s.get("search")
		if !ok || !reflect.DeepEqual(got, st) {
			t.Errorf("with %s set: put %+v, got %+v", f.Name, st, got)
		}
	}
}

// setNonZero sets v, a field of results.AlertState, to a value that is
// not its zero value; an empty slice or map counts, since one is not nil.
func setNonZero(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(1)
	case reflect.String:
		v.SetString("x")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		setNonZero(t, v.Field(0), name+"."+v.Type().Field(0).Name)
	default:
		t.Fatalf("field %s: kind %s this test does not know", name, v.Kind())
	}
}
