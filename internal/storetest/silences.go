package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// silencesLifecycle adds silences, lists the active ones and all of them,
// and expires one: an expired or ended silence leaves the active list, and
// expiring again or an ended one does nothing.
func silencesLifecycle(t *testing.T, impl Impl) {
	ctx := context.Background()
	s := impl.Open(t)
	now := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	ids := func(ss []results.Silence) []int64 {
		var out []int64
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	list := func(at time.Time, all bool) []results.Silence {
		t.Helper()
		got, err := s.Silences(ctx, at, all)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := list(now, true); len(got) != 0 {
		t.Fatalf("Silences of an empty store: got %v", got)
	}

	byProbe := results.Silence{Matchers: results.Matchers{Probes: []string{"search", "weather"}},
		StartsAt: now, EndsAt: now.Add(2 * time.Hour), Reason: "maintenance", CreatedAt: now}
	byLabel := results.Silence{Matchers: results.Matchers{Labels: map[string]string{"team": "search"}},
		StartsAt: now, EndsAt: now.Add(time.Hour), Reason: "deploy", CreatedAt: now}
	var err error
	if byProbe.ID, err = s.AddSilence(ctx, byProbe); err != nil {
		t.Fatal(err)
	}
	if byLabel.ID, err = s.AddSilence(ctx, byLabel); err != nil {
		t.Fatal(err)
	}
	if byProbe.ID == byLabel.ID {
		t.Fatalf("AddSilence: both got id %d", byProbe.ID)
	}
	if got, want := list(now, false), []results.Silence{byProbe, byLabel}; !reflect.DeepEqual(got, want) {
		t.Fatalf("active silences:\n got %+v\nwant %+v", got, want)
	}
	// byLabel has ended an hour later: only --all lists it.
	later := now.Add(time.Hour)
	if got, want := ids(list(later, false)), []int64{byProbe.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("active an hour later: got %v, want %v", got, want)
	}
	if got, want := ids(list(later, true)), []int64{byProbe.ID, byLabel.ID}; !reflect.DeepEqual(got, want) {
		t.Errorf("all an hour later: got %v, want %v", got, want)
	}

	expiredAt := now.Add(30 * time.Minute)
	if err := s.ExpireSilence(ctx, byProbe.ID, expiredAt); err != nil {
		t.Fatal(err)
	}
	if err := s.ExpireSilence(ctx, byProbe.ID, expiredAt.Add(time.Minute)); err != nil {
		t.Errorf("expiring an expired silence: got %v, want nil", err)
	}
	if err := s.ExpireSilence(ctx, byLabel.ID, later); err != nil {
		t.Errorf("expiring an ended silence: got %v, want nil", err)
	}
	if got := list(expiredAt, false); len(got) != 1 || got[0].ID != byLabel.ID {
		t.Errorf("active once byProbe is expired: got %+v, want only %d", got, byLabel.ID)
	}
	all := list(later, true)
	byProbe.ExpiredAt = expiredAt
	if want := []results.Silence{byProbe, byLabel}; !reflect.DeepEqual(all, want) {
		t.Errorf("all after expiring:\n got %+v\nwant %+v (the first expiry kept, the ended one untouched)", all, want)
	}
	if err := s.ExpireSilence(ctx, 999, now); !errors.Is(err, impl.ErrNotFound) {
		t.Errorf("expiring unknown silence 999: got %v, want ErrNotFound", err)
	}
}
