package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// recordGroup records n alerts of one group, a second apart, and returns
// their ids.
func recordGroup(t *testing.T, s *postgres.Store, key string, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		rec := failingRun(fmt.Sprintf("op-%s-%d", key, i+1))
		rec.Alerts[0].CreatedAt = rec.Alerts[0].CreatedAt.Add(time.Duration(i) * time.Second)
		rec.Alerts[0].Receiver, rec.Alerts[0].GroupKey = "default/slack", key
		if err := s.RecordRun(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Alerts[0].ID)
	}
	return ids
}

// TestFencedPendingGroupClaimsTogether: the fenced outbox claims a group's
// alerts all at once for its epoch, waiting for a DueAlerts that holds
// some of them rather than skipping them, so that no leader sends part of
// a group; a deposed epoch's claim is refused.
func TestFencedPendingGroupClaimsTogether(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	key := `default/slack{provider="search"}`
	ids := recordGroup(t, s, key, 3)
	l, err := s.AcquireLease(ctx, results.DefaultLocation, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o := s.FencedOutbox(results.Fence{Location: results.DefaultLocation, Epoch: l.Epoch})

	var calls atomic.Int32
	holding, release := make(chan struct{}), make(chan struct{})
	postgres.OnClaimed(s, func() {
		if calls.Add(1) == 1 {
			close(holding)
			<-release
		}
	})
	claimed := make(chan error, 1)
	go func() {
		_, err := o.DueAlerts(ctx, far, 2) // holds the first two rows
		claimed <- err
	}()
	<-holding
	type answer struct {
		g   results.AlertGroup
		err error
	}
	got := make(chan answer, 1)
	go func() {
		g, err := o.PendingGroup(ctx, key)
		got <- answer{g, err}
	}()
	var a answer
	early := false
	select {
	case a = <-got:
		early = true
		t.Errorf("PendingGroup returned %v, %v while another claim held part of the group; want it to wait", alertIDs(a.g.Alerts), a.err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if err := <-claimed; err != nil {
		t.Fatal(err)
	}
	if !early {
		a = <-got
	}
	if a.err != nil || !slices.Equal(alertIDs(a.g.Alerts), ids) {
		t.Fatalf("PendingGroup = %v, %v; want the whole group %v", alertIDs(a.g.Alerts), a.err, ids)
	}
	if n := count(t, dsn, fmt.Sprintf(`SELECT count(*) FROM alerts WHERE group_key = '%s' AND claimed_epoch = %d`, key, l.Epoch)); n != 3 {
		t.Errorf("%d alerts of the group claimed by epoch %d, want 3", n, l.Epoch)
	}

	takeOver(t, dsn, "b")
	if _, err := o.PendingGroup(ctx, key); !errors.Is(err, results.ErrFenced) {
		t.Errorf("PendingGroup of a deposed epoch: %v, want ErrFenced", err)
	}
}
