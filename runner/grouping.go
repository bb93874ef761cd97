package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Grouped messages (notify.group_by, docs/alerting.md): the recorder gives
// each alert that may join a group its group key (see address), and the
// deliverer sends the pending alerts of one key as one message. Every
// alert keeps its outbox row: the group's rows are sent, retried, given up
// and marked together, and when a group is due is decided from what the
// store holds (groupDue), so a restart neither loses a group, nor sends it
// twice, nor starts its wait again.

// groupings returns the grouping of every receiver whose route groups its
// alerts, by receiver key.
func groupings(n checks.Notify) map[string]checks.Grouping {
	out := map[string]checks.Grouping{}
	for _, r := range n.AllRoutes() {
		if !r.Notify.Grouping.Enabled() {
			continue
		}
		for _, key := range r.Receivers() {
			out[key] = r.Notify.Grouping
		}
	}
	return out
}

// groupKey returns the key of the group an alert of kind to receiver
// joins, for a probe with labels; "" when it goes alone: its receiver's
// route does not group, or the kind never joins a group (see
// results.Groupable).
func groupKey(kind results.AlertKind, receiver string, groups map[string]checks.Grouping, labels map[string]string) string {
	g, ok := groups[receiver]
	if !ok || !results.Groupable(kind) {
		return ""
	}
	return results.GroupKey(receiver, g.GroupBy, labels)
}

// groupDue returns when the pending alerts of a group are due as one
// message: group_wait after the oldest of them was recorded, and no sooner
// than group_interval after the group's last delivered message (last;
// zero for none), nor than the retry a failed attempt of one of them set.
// A group's next message thus waits for the alerts that join it within
// group_wait, and a group that keeps changing is told at most every
// group_interval. alerts must not be empty.
func groupDue(alerts []results.Alert, last time.Time, g checks.Grouping) time.Time {
	first := alerts[0].CreatedAt
	for _, a := range alerts[1:] {
		if a.CreatedAt.Before(first) {
			first = a.CreatedAt
		}
	}
	due := first.Add(g.GroupWait)
	if !last.IsZero() && last.Add(g.GroupInterval).After(due) {
		due = last.Add(g.GroupInterval)
	}
	for _, a := range alerts {
		// An alert never tried may have been put off to the group's due
		// time already: only a retry's time is a constraint of its own.
		if a.DeliveryTries > 0 && a.NextAttemptAt.After(due) {
			due = a.NextAttemptAt
		}
	}
	return due
}

// deliverGroup makes one delivery attempt of the group key, one of whose
// alerts is due, unless the group is not due yet: then each of its alerts
// is put off to the group's due time (so that the outbox holds no due
// alert the deliverer would only look at again). Every alert of the group
// is added to tried. It returns false when the store failed.
func (d *deliverer) deliverGroup(ctx context.Context, key string, tried map[int64]bool) bool {
	g, err := d.store.PendingGroup(ctx, key)
	if err != nil {
		if ctx.Err() == nil {
			d.storeFailed("pending_group", err)
			d.logger.Error("reading an alert group failed", "group", key, "error", err)
		}
		return false
	}
	for _, a := range g.Alerts {
		tried[a.ID] = true
	}
	if len(g.Alerts) == 0 {
		return true // delivered by another pass, or by the leader before us
	}
	g.Key = key
	if _, labels, err := results.ParseGroupKey(key); err == nil {
		g.Labels = labels
	}
	receiver := g.Alerts[0].Receiver
	if d.now().Before(d.pausedUntil[receiver]) {
		return true
	}
	now := d.now()
	send := g.Alerts[:0:0]
	for _, a := range g.Alerts {
		var ok bool
		switch at, unmarked := d.unmarked[a.ID]; {
		case unmarked:
			ok = d.markDelivered(ctx, a, a.DeliveryTries, at)
		case now.Sub(a.CreatedAt) > d.maxAge:
			ok = d.giveUp(ctx, a, a.DeliveryTries, fmt.Sprintf("gave up: alert is %s old, older than the %s limit", now.Sub(a.CreatedAt).Round(time.Second), d.maxAge))
		case a.DeliveryTries >= d.maxTries:
			ok = d.giveUp(ctx, a, a.DeliveryTries, fmt.Sprintf("gave up after %d tries", a.DeliveryTries))
		default:
			ok = true
			send = append(send, a)
		}
		if !ok {
			return false
		}
	}
	if len(send) == 0 {
		return true
	}
	if due := groupDue(send, g.LastDelivered, d.groupingOf(receiver, g.Labels)); due.After(now) {
		return d.putOff(ctx, send, due)
	}
	g.Alerts = send

	retry, retryAfter, err := d.sendGroup(ctx, g)
	if retryAfter > 0 {
		d.pausedUntil[receiver] = d.now().Add(min(retryAfter, maxRetryAfter))
	}
	if err == nil {
		at := d.now()
		for _, a := range send {
			if !d.markDelivered(ctx, a, a.DeliveryTries+1, at) {
				return false
			}
		}
		d.logger.Info("alert group delivered", "group", key, "alerts", len(send))
		return true
	}
	if ctx.Err() != nil {
		d.logger.Info("alert group delivery interrupted by shutdown", "group", key, "alerts", len(send), "error", err.Error())
		return true
	}
	// One attempt for the group, counted on each of its alerts: an alert
	// that joined late has had fewer, and gets its own remaining tries.
	next := d.now().Add(d.backoff(maxTries(send)+1, retryAfter))
	for _, a := range send {
		tries := a.DeliveryTries + 1
		var ok bool
		switch {
		case !retry:
			ok = d.giveUp(ctx, a, tries, "not retryable: "+err.Error())
		case tries >= d.maxTries:
			ok = d.giveUp(ctx, a, tries, fmt.Sprintf("gave up after %d tries: %v", tries, err))
		default:
			ok = d.markRetry(ctx, a, tries, next, err)
		}
		if !ok {
			return false
		}
	}
	return true
}

// groupingOf returns the grouping by which a group of receiver with
// labels is due: its route's, or, for a location's group of a route that
// does not group, silentGrouping's.
func (d *deliverer) groupingOf(receiver string, labels map[string]string) checks.Grouping {
	g := d.grouping(receiver)
	if _, ok := results.GroupLocation(labels); ok && !g.Enabled() {
		return d.silentGrouping()
	}
	return g
}

// maxTries returns the most delivery tries of alerts.
func maxTries(alerts []results.Alert) int {
	n := 0
	for _, a := range alerts {
		n = max(n, a.DeliveryTries)
	}
	return n
}

// putOff makes the alerts of a group that is not due yet due at the
// group's time, keeping their tries and last error.
func (d *deliverer) putOff(ctx context.Context, alerts []results.Alert, due time.Time) bool {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	for _, a := range alerts {
		if !a.NextAttemptAt.Before(due) {
			continue
		}
		if err := d.store.MarkAlertRetry(mctx, a.ID, a.DeliveryTries, due, a.LastError); err != nil {
			d.storeFailed("mark_alert_retry", err)
			d.logger.Error("putting off an alert of a group failed", append(d.attrs(a, a.DeliveryTries, nil), "group", a.GroupKey, "store_error", err)...)
			return false
		}
	}
	return true
}

// sendGroup is send for a group.
func (d *deliverer) sendGroup(ctx context.Context, g results.AlertGroup) (retry bool, retryAfter time.Duration, err error) {
	return d.guard(ctx, func(sctx context.Context) (bool, time.Duration, error) { return d.sender.SendGroup(sctx, g) })
}
