package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// silenceCmd groups the commands that mute alerts for a while. The daemon
// reads silences from the database, so they need no reload.
type silenceCmd struct {
	Add    silenceAddCmd    `cmd:"" help:"Mute the alerts of probes (by name or label) for a while; prints the silence's id."`
	List   silenceListCmd   `cmd:"" help:"List the silences not yet ended: active ones and those planned (--all: also the ended and expired); the table adds the config's maintenance windows."`
	Expire silenceExpireCmd `cmd:"" help:"End a silence now."`
}

type silenceAddCmd struct {
	Probe  []string      `placeholder:"NAME" help:"Silence this probe (repeatable: any of them)."`
	Label  []string      `placeholder:"K=V" help:"Silence probes with this label value (repeatable: all of them)."`
	Start  string        `placeholder:"TIME" help:"When it starts: an RFC 3339 time (2026-12-03T02:00:00Z) or a duration from now (45m); default now, for a maintenance window planned ahead."`
	For    time.Duration `required:"" placeholder:"DURATION" help:"How long, from its start: 30m, 2h."`
	Reason string        `required:"" placeholder:"TEXT" help:"Why, for whoever wonders where the alerts went."`
}

// Run adds the silence and prints its id.
func (a *silenceAddCmd) Run(e *env, root *cli) error {
	m := results.Matchers{Probes: a.Probe}
	for _, kv := range a.Label {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageError("--label %q: want KEY=VALUE", kv)
		}
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
	}
	if m.Empty() {
		return usageError("silence add: name what to silence with --probe NAME or --label KEY=VALUE")
	}
	if a.For <= 0 {
		return usageError("--for %v: want a positive duration, such as 2h", a.For)
	}
	if strings.TrimSpace(a.Reason) == "" {
		return usageError("--reason: must not be empty")
	}
	now := time.Now().UTC()
	start, err := silenceStart(a.Start, now)
	if err != nil {
		return err
	}
	if end := start.Add(a.For); !end.After(now) {
		return usageError("--start %s --for %v: the silence would have ended at %s, before now", a.Start, a.For, results.FormatTime(end))
	}
	store, cfg, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := knownProbes(e.ctx, store, cfg, a.Probe); err != nil {
		return err
	}
	silence := results.Silence{Matchers: m, StartsAt: start, EndsAt: start.Add(a.For), Reason: a.Reason, CreatedAt: now}
	if cfg != nil && !slices.ContainsFunc(cfg.Probes, func(p *checks.Probe) bool { return silence.Matches(p.Name, p.Labels) }) {
		// Not an error: a label silence may be meant for probes a coming
		// config change adds. But a typo would mute nothing, silently.
		fmt.Fprintf(e.stderr, "toolpulse: warning: no probe of %s matches %s now; the silence mutes only probes that match it later\n",
			cfg.Path, m)
	}
	id, err := store.AddSilence(e.ctx, silence)
	if err != nil {
		return softwareError(err)
	}
	_, err = fmt.Fprintln(e.stdout, id)
	return err
}

// silenceStart reads --start: empty is now, else an RFC 3339 time or a
// duration from now.
func silenceStart(flag string, now time.Time) (time.Time, error) {
	if flag == "" {
		return now, nil
	}
	if t, err := time.Parse(time.RFC3339, flag); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(flag)
	if err != nil || d < 0 {
		return time.Time{}, usageError("--start %q: want an RFC 3339 time such as 2026-12-03T02:00:00Z, or a duration from now such as 45m", flag)
	}
	return now.Add(d), nil
}

type silenceListCmd struct {
	All    bool   `help:"Also the silences that have ended or were expired."`
	Format string `enum:"table,json" default:"table" help:"Output: table or json (one object per line)."`
}

// Run prints the silences; the table adds the config's maintenance
// windows, which mute alerts too (the JSON lines stay silences only).
func (l *silenceListCmd) Run(e *env, root *cli) error {
	store, cfg, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return err
	}
	defer store.Close()
	now := time.Now()
	silences, err := store.Silences(e.ctx, now, l.All)
	if err != nil {
		return softwareError(err)
	}
	if l.Format == "json" {
		err = writeSilencesJSON(e.stdout, silences)
	} else {
		err = writeSilencesTable(e.stdout, silences)
		if err == nil && cfg != nil && len(cfg.Maintenance) > 0 {
			err = writeMaintenanceTable(e.stdout, cfg.Maintenance, now)
		}
	}
	if err != nil {
		return softwareError(err)
	}
	return nil
}

type silenceExpireCmd struct {
	ID string `arg:"" help:"The silence's id, as silence add printed it."`
}

// Run expires the silence. Expiring one that has already ended is not an
// error: it is not silencing anything, which is what was asked for.
func (x *silenceExpireCmd) Run(e *env, root *cli) error {
	id, err := strconv.ParseInt(x.ID, 10, 64)
	if err != nil || id <= 0 {
		return usageError("silence expire %q: want a silence id, a positive number", x.ID)
	}
	store, _, err := openStoreForReading(e.ctx, root, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.ExpireSilence(e.ctx, id, time.Now()); err != nil {
		if errors.Is(err, results.ErrNotFound) {
			return usageError("silence expire %d: no such silence (see toolpulse silence list --all)", id)
		}
		return softwareError(err)
	}
	return nil
}

func writeSilencesJSON(w io.Writer, silences []results.Silence) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, s := range silences {
		if err := enc.Encode(present.ToSilenceRow(s)); err != nil {
			return err
		}
	}
	return nil
}

func writeSilencesTable(w io.Writer, silences []results.Silence) error {
	if len(silences) == 0 {
		_, err := fmt.Fprintln(w, "no silences")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMATCHES\tSTARTS\tENDS\tEXPIRED\tREASON")
	for _, s := range silences {
		expired := "-"
		if !s.ExpiredAt.IsZero() {
			expired = results.FormatTime(s.ExpiredAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.ID, present.Printable(s.Matchers.String()), results.FormatTime(s.StartsAt),
			results.FormatTime(s.EndsAt), expired, present.OneLine(present.Printable(s.Reason), present.MaxMessageRunes))
	}
	return tw.Flush()
}

// writeMaintenanceTable lists the config's maintenance windows after the
// silences: whether each is on at now, until when, or when it next starts.
func writeMaintenanceTable(w io.Writer, windows []results.MaintenanceWindow, now time.Time) error {
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MAINTENANCE\tMATCHES\tSCHEDULE\tNOW")
	for _, mw := range windows {
		state := "off, next from "
		at, _ := mw.NextAfter(now)
		if until, on := mw.ActiveAt(now); on {
			state, at = "on until ", until
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\n", mw.Name, present.Printable(mw.Matchers.String()), mw.String(), state, results.FormatTime(at))
	}
	return tw.Flush()
}
