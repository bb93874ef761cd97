package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// profileSavedWithRun: a run's profile update is saved in its transaction
// and read back; a run without one leaves it; a refused run saves none.
func profileSavedWithRun(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	if _, found, err := s.ShapeProfile(ctx, "external_search"); err != nil || found {
		t.Fatalf("ShapeProfile of a new probe: found %v, %v; want none", found, err)
	}
	at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	r := shapedRun("op-1", "external_search", fpList, at)
	r.Shape.Profile = &results.ProfileUpdate{Data: `{"v":1,"answers":1}`, Answers: 1}
	recordRun(t, s, &results.RunRecord{Result: r})
	recordRun(t, s, &results.RunRecord{Result: shapedRun("op-2", "external_search", fpList, at.Add(time.Minute))})
	p, found, err := s.ShapeProfile(ctx, "external_search")
	if err != nil || !found || p.Data != `{"v":1,"answers":1}` || p.Answers != 1 || !p.UpdatedAt.Equal(at) || !p.ResetAt.IsZero() {
		t.Errorf("ShapeProfile: %+v, found %v, %v; want the first run's", p, found, err)
	}
	dup := shapedRun("op-1", "external_search", fpList, at.Add(2*time.Minute))
	dup.Shape.Profile = &results.ProfileUpdate{Data: `{"v":1,"answers":9}`, Answers: 9}
	if err := s.RecordRun(ctx, &results.RunRecord{Result: dup}); err == nil {
		t.Fatal("RecordRun of a duplicate: no error")
	}
	if p, _, _ := s.ShapeProfile(ctx, "external_search"); p.Answers != 1 {
		t.Errorf("a refused run saved its profile: %+v", p)
	}
}

// profileReset: a reset empties the profile and is listed by
// ProfileResets; a profile learned before the reset (its ResetAt the old
// one) is not saved over it, one learned after it is.
func profileReset(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	save := func(id string, when time.Time, answers int, resetAt time.Time) {
		r := shapedRun(id, "external_search", fpList, when)
		r.Shape.Profile = &results.ProfileUpdate{Data: fmt.Sprintf(`{"answers":%d}`, answers), Answers: answers, ResetAt: resetAt}
		recordRun(t, s, &results.RunRecord{Result: r})
	}
	save("op-1", at, 7, time.Time{})
	if had, err := s.ResetProfile(ctx, "unknown_probe", at); err != nil || had {
		t.Errorf("ResetProfile of a probe never seen: had %v, %v; want false", had, err)
	}
	resetAt := at.Add(time.Minute)
	if had, err := s.ResetProfile(ctx, "external_search", resetAt); err != nil || !had {
		t.Fatalf("ResetProfile: had %v, %v; want true", had, err)
	}
	p, found, err := s.ShapeProfile(ctx, "external_search")
	if err != nil || !found || p.Data != "" || p.Answers != 0 || !p.ResetAt.Equal(resetAt) {
		t.Errorf("after the reset: %+v, found %v, %v; want empty with its reset time", p, found, err)
	}
	resets, err := s.ProfileResets(ctx, at)
	if err != nil || len(resets) != 2 || !resets["external_search"].Equal(resetAt) {
		t.Errorf("ProfileResets since before the resets: %v, %v", resets, err)
	}
	if resets, err := s.ProfileResets(ctx, resetAt.Add(time.Second)); err != nil || len(resets) != 0 {
		t.Errorf("ProfileResets since after the resets: %v, %v; want none", resets, err)
	}

	save("op-2", at.Add(2*time.Minute), 8, time.Time{}) // learned before the reset
	if p, _, _ := s.ShapeProfile(ctx, "external_search"); p.Data != "" {
		t.Errorf("a profile learned before the reset overwrote it: %+v", p)
	}
	save("op-3", at.Add(3*time.Minute), 1, resetAt)
	if p, _, _ := s.ShapeProfile(ctx, "external_search"); p.Answers != 1 || !p.ResetAt.Equal(resetAt) {
		t.Errorf("a profile learned after the reset: %+v, want it saved", p)
	}
}

// recentShapes: a probe's shapes since a time, most runs first, with their
// canonical text, bounded by limit; other probes do not count.
func recentShapes(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	n := 0
	add := func(probe, fp string, times ...time.Time) {
		for _, when := range times {
			n++
			recordRun(t, s, &results.RunRecord{Result: shapedRun(fmt.Sprint("op-", n), probe, fp, when)})
		}
	}
	add("external_search", fpList, at.Add(-3*time.Hour), at, at.Add(time.Minute))
	add("external_search", fpMap, at.Add(2*time.Minute))
	add("weather", fpMap, at, at, at)
	got, err := s.RecentShapes(ctx, "external_search", at, 10)
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, sh := range got {
		summary = append(summary, fmt.Sprintf("%s %s %d %s", sh.Fingerprint, sh.Canonical, sh.Runs, results.FormatTime(sh.LastSeen)))
	}
	want := []string{
		fpList + " shape " + fpList + " 2 2026-10-26T13:01:00.000Z",
		fpMap + " shape " + fpMap + " 1 2026-10-26T13:02:00.000Z",
	}
	if !slices.Equal(summary, want) {
		t.Errorf("RecentShapes: got %q, want %q", summary, want)
	}
	if got, err := s.RecentShapes(ctx, "external_search", at, 1); err != nil || len(got) != 1 || got[0].Fingerprint != fpList {
		t.Errorf("RecentShapes with limit 1: %+v, %v", got, err)
	}
}
