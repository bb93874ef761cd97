package web

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// The strip draws each run as a bar, newest on the right. The outcome is
// told by the bar's height as well as its colour (full for pass, two
// thirds for contract_error, one third for unavailable), so that it reads
// without colour too; the page carries the legend.
const (
	stripCell   = 6 // bar width plus gap, in px
	stripBar    = 5
	stripHeight = 18
	sparkWidth  = 150
	sparkHeight = 30
)

// strip is the outcome strip of a probe's last runs as SVG geometry: one
// path per outcome, so a row costs a few hundred bytes even at 50 runs.
type strip struct {
	Width, Height int
	Track         string // path of a thin line under the cells no run fills yet
	Paths         []stripPath
	Runs          int
	Passed        int
	Summary       string // the strip in words, for its <title>
}

type stripPath struct {
	Outcome results.Outcome
	D       string
}

// barHeight is the height of an outcome's bar.
func barHeight(o results.Outcome) int {
	switch o {
	case results.Pass:
		return stripHeight
	case results.ContractError:
		return stripHeight * 2 / 3
	default:
		return stripHeight / 3
	}
}

// newStrip draws runs, oldest first, right-aligned in a strip of capacity
// cells.
func newStrip(runs []results.RecentRun, capacity int) strip {
	runs = runs[max(0, len(runs)-capacity):]
	s := strip{Width: capacity * stripCell, Height: stripHeight, Runs: len(runs)}
	paths := map[results.Outcome]*strings.Builder{}
	counts := map[results.Outcome]int{}
	offset := (capacity - len(runs)) * stripCell
	if offset > 0 {
		s.Track = fmt.Sprintf("M0 %dh%dv1h-%dz", stripHeight-1, offset, offset)
	}
	for i, r := range runs {
		b := paths[r.Outcome]
		if b == nil {
			b = &strings.Builder{}
			paths[r.Outcome] = b
		}
		h := barHeight(r.Outcome)
		fmt.Fprintf(b, "M%d %dh%dv%dh-%dz", offset+i*stripCell, stripHeight-h, stripBar, h, stripBar)
		counts[r.Outcome]++
	}
	var words []string
	for _, o := range results.Outcomes {
		if b := paths[o]; b != nil {
			s.Paths = append(s.Paths, stripPath{Outcome: o, D: b.String()})
			words = append(words, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	s.Passed = counts[results.Pass]
	if len(runs) == 0 {
		s.Summary = "no runs yet"
	} else {
		s.Summary = fmt.Sprintf("last %d runs, oldest to newest: %s", len(runs), strings.Join(words, ", "))
	}
	return s
}

// sparkline is the latency of a probe's last runs as an SVG polyline,
// scaled to the slowest of them, with the figures a person reads next to
// it.
type sparkline struct {
	Width, Height int
	Points        string // "x,y x,y ..."; "" when there is nothing to draw
	Last, P95     time.Duration
	Max           time.Duration
}

func newSparkline(runs []results.RecentRun) sparkline {
	sp := sparkline{Width: sparkWidth, Height: sparkHeight}
	if len(runs) == 0 {
		return sp
	}
	durations := make([]time.Duration, len(runs))
	for i, r := range runs {
		durations[i] = r.Duration
	}
	sp.Last = durations[len(durations)-1]
	sorted := slices.Sorted(slices.Values(durations))
	sp.Max = sorted[len(sorted)-1]
	sp.P95 = nearestRank(sorted, 95)
	scale := float64(sp.Max)
	if scale == 0 {
		scale = 1 // every run under a millisecond: a flat line at the bottom
	}
	y := func(d time.Duration) float64 {
		return float64(sparkHeight-1) - float64(sparkHeight-2)*float64(d)/scale
	}
	if len(durations) == 1 {
		// One run is a level line; a polyline needs two points to show.
		sp.Points = fmt.Sprintf("1.0,%.1f %.1f,%.1f", y(durations[0]), float64(sparkWidth-1), y(durations[0]))
		return sp
	}
	step := float64(sparkWidth-2) / float64(len(durations)-1)
	points := make([]string, len(durations))
	for i, d := range durations {
		points[i] = fmt.Sprintf("%.1f,%.1f", 1+step*float64(i), y(d))
	}
	sp.Points = strings.Join(points, " ")
	return sp
}

// nearestRank is the p-th percentile of sorted (ascending, not empty): the
// value at rank ceil(p/100 * n), as `stats` computes it.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
