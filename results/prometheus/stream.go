package prometheus

import (
	"bufio"
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// # Streamed scrapes
//
// A scrape through the registry builds a message for every series before
// the first byte is written: at 10,000 probes some 130,000 series, 40 MB
// held until the response is out, which the collector then counts as live
// and doubles into its next heap goal. In the text format (what a
// scraper gets unless it asks for protobuf) the per-probe families and
// toolpulse_probe_info are instead written straight from a copy of the
// probes' plain numbers, family by family, in the order the registry
// sorts them, byte for byte what it would serve (TestStreamedScrape);
// every other family still comes from the registry. Any other format, or
// a probe the registry would refuse, takes the registry's way.

// streamHandler serves /metrics as the package doc above says.
type streamHandler struct {
	m *Metrics
	// rest gathers every family but the streamed ones.
	rest prometheus.Gatherer
	// full serves a scrape the registry's way.
	full     http.Handler
	inFlight chan struct{}
}

// Handler returns the /metrics handler of m, whose metrics NewAt
// registered on reg, a registry made by NewRegistry: it serves what
// Handler(reg) does, streaming the per-probe families in the text format.
func (m *Metrics) Handler(reg *prometheus.Registry) http.Handler {
	return &streamHandler{m: m, rest: m.rest, full: Handler(reg), inFlight: make(chan struct{}, maxScrapesInFlight)}
}

func (h *streamHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	format := expfmt.Negotiate(req.Header)
	if format.FormatType() != expfmt.TypeTextPlain {
		h.full.ServeHTTP(w, req)
		return
	}
	select {
	case h.inFlight <- struct{}{}:
		defer func() { <-h.inFlight }()
	default:
		http.Error(w, "Limit of concurrent requests reached ("+strconv.Itoa(maxScrapesInFlight)+"), try again later.", http.StatusServiceUnavailable)
		return
	}
	probes := h.m.snapshot()
	for i := range probes {
		if checkProbe(&probes[i]) != nil {
			h.full.ServeHTTP(w, req)
			return
		}
	}
	rest, err := h.rest.Gather()
	if err != nil {
		h.full.ServeHTTP(w, req)
		return
	}
	slices.SortFunc(probes, func(a, b probe) int { return strings.Compare(a.name, b.name) })
	w.Header().Set("Content-Type", string(format))
	bw := bufio.NewWriterSize(w, 32<<10)
	families := h.m.streamedFamilies(probes)
	enc := expfmt.NewEncoder(bw, format)
	for len(rest) > 0 || len(families) > 0 {
		if len(families) == 0 || (len(rest) > 0 && rest[0].GetName() < families[0].name) {
			if err := enc.Encode(rest[0]); err != nil {
				return
			}
			rest = rest[1:]
			continue
		}
		families[0].write(bw)
		families = families[1:]
	}
	_ = bw.Flush()
}

// streamedFamily is one family written straight from the probes.
type streamedFamily struct {
	name, help, typ string
	// series writes the family's series lines, in the registry's order.
	series func(tw *textWriter)
	// empty: the family has no series now, and the registry would not
	// show it.
	empty bool
}

func (f *streamedFamily) write(w *bufio.Writer) {
	if f.empty {
		return
	}
	w.WriteString("# HELP ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	helpEscaper.WriteString(w, f.help)
	w.WriteString("\n# TYPE ")
	w.WriteString(f.name)
	w.WriteByte(' ')
	w.WriteString(f.typ)
	w.WriteByte('\n')
	f.series(&textWriter{w: w})
}

var (
	helpEscaper  = strings.NewReplacer("\\", `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer("\\", `\\`, "\n", `\n`, "\"", `\"`)
)

// textWriter writes sample lines as expfmt's text format does.
type textWriter struct {
	w   *bufio.Writer
	num []byte
	sep byte
}

// start begins a line of name and its first labels.
func (t *textWriter) start(name string) {
	t.w.WriteString(name)
	t.sep = '{'
}

func (t *textWriter) label(name, value string) {
	t.w.WriteByte(t.sep)
	t.w.WriteString(name)
	t.w.WriteString(`="`)
	valueEscaper.WriteString(t.w, value)
	t.w.WriteByte('"')
	t.sep = ','
}

func (t *textWriter) floatLabel(name string, v float64) {
	t.w.WriteByte(t.sep)
	t.w.WriteString(name)
	t.w.WriteString(`="`)
	t.float(v)
	t.w.WriteByte('"')
	t.sep = ','
}

// end closes the labels and writes the value.
func (t *textWriter) end(v float64) {
	if t.sep == ',' {
		t.w.WriteByte('}')
	}
	t.w.WriteByte(' ')
	t.float(v)
	t.w.WriteByte('\n')
}

// float writes v as expfmt's writeFloat does.
func (t *textWriter) float(v float64) {
	switch {
	case v == 1:
		t.w.WriteByte('1')
	case v == 0:
		t.w.WriteByte('0')
	case v == -1:
		t.w.WriteString("-1")
	case math.IsNaN(v):
		t.w.WriteString("NaN")
	case math.IsInf(v, +1):
		t.w.WriteString("+Inf")
	case math.IsInf(v, -1):
		t.w.WriteString("-Inf")
	default:
		t.num = strconv.AppendFloat(t.num[:0], v, 'g', -1, 64)
		t.w.Write(t.num)
	}
}

// streamedFamilies returns the per-probe families and
// toolpulse_probe_info, sorted by name, over probes sorted by name.
func (m *Metrics) streamedFamilies(probes []probe) []streamedFamily {
	sh := m.shared
	loc := func(t *textWriter) {}
	if sh.hasLocation {
		loc = func(t *textWriter) { t.label(labelLocation, sh.locationValue) }
	}
	ran := slices.ContainsFunc(probes, func(p probe) bool { return p.last != noOutcome })
	validated := slices.ContainsFunc(probes, func(p probe) bool { return p.hasValidated })
	// outcomes and kinds in label value order.
	outcomes := sortedIndexes(sh.outcomeValues[:])
	kinds := sortedIndexes(sh.kindValues[:])

	perProbe := func(name string, value func(p *probe) (float64, bool)) func(t *textWriter) {
		return func(t *textWriter) {
			for i := range probes {
				p := &probes[i]
				v, ok := value(p)
				if !ok {
					continue
				}
				t.start(name)
				loc(t)
				t.label(labelProbe, p.name)
				t.end(v)
			}
		}
	}
	byOutcome := func(name string, value func(p *probe, o int) (float64, bool)) func(t *textWriter) {
		return func(t *textWriter) {
			for _, o := range outcomes {
				for i := range probes {
					p := &probes[i]
					v, ok := value(p, o)
					if !ok {
						continue
					}
					t.start(name)
					loc(t)
					t.label(labelOutcome, sh.outcomeValues[o])
					t.label(labelProbe, p.name)
					t.end(v)
				}
			}
		}
	}

	families := []streamedFamily{
		{name: "toolpulse_attempts_total", series: perProbe("toolpulse_attempts_total", func(p *probe) (float64, bool) {
			return float64(p.attempts), true
		})},
		{name: "toolpulse_drift_events_total", series: func(t *textWriter) {
			for _, k := range kinds {
				for i := range probes {
					p := &probes[i]
					t.start("toolpulse_drift_events_total")
					t.label(labelKind, sh.kindValues[k])
					loc(t)
					t.label(labelProbe, p.name)
					t.end(float64(p.drifts[k]))
				}
			}
		}},
		{name: "toolpulse_last_outcome", empty: !ran, series: byOutcome("toolpulse_last_outcome", func(p *probe, o int) (float64, bool) {
			if p.last == noOutcome {
				return 0, false
			}
			if int(p.last) == o {
				return 1, true
			}
			return 0, true
		})},
		{name: "toolpulse_last_run_timestamp_seconds", empty: !ran, series: perProbe("toolpulse_last_run_timestamp_seconds", func(p *probe) (float64, bool) {
			return p.lastRun, p.last != noOutcome
		})},
		{name: "toolpulse_probe_info", series: m.info.writeSeries},
		{name: "toolpulse_retried_runs_total", series: byOutcome("toolpulse_retried_runs_total", func(p *probe, o int) (float64, bool) {
			return float64(p.retried[o]), true
		})},
		{name: "toolpulse_run_duration_seconds", series: func(t *textWriter) {
			for i := range probes {
				p := &probes[i]
				var cumulative uint64
				for b, bound := range durationBuckets {
					cumulative += p.buckets[b]
					t.start("toolpulse_run_duration_seconds_bucket")
					loc(t)
					t.label(labelProbe, p.name)
					t.floatLabel("le", bound)
					t.end(float64(cumulative))
				}
				t.start("toolpulse_run_duration_seconds_bucket")
				loc(t)
				t.label(labelProbe, p.name)
				t.floatLabel("le", math.Inf(+1))
				t.end(float64(p.durCount))
				t.start("toolpulse_run_duration_seconds_sum")
				loc(t)
				t.label(labelProbe, p.name)
				t.end(p.durSum)
				t.start("toolpulse_run_duration_seconds_count")
				loc(t)
				t.label(labelProbe, p.name)
				t.end(float64(p.durCount))
			}
		}},
		{name: "toolpulse_runs_total", series: func(t *textWriter) {
			type ref struct{ p, r int }
			var refs []ref
			for i := range probes {
				for r := range probes[i].runs {
					refs = append(refs, ref{i, r})
				}
			}
			slices.SortFunc(refs, func(a, b ref) int {
				ra, rb := &probes[a.p].runs[a.r], &probes[b.p].runs[b.r]
				return cmp.Or(strings.Compare(ra.code, rb.code),
					strings.Compare(sh.outcomeValues[ra.outcome], sh.outcomeValues[rb.outcome]),
					strings.Compare(probes[a.p].name, probes[b.p].name))
			})
			for _, x := range refs {
				p, rc := &probes[x.p], &probes[x.p].runs[x.r]
				t.start("toolpulse_runs_total")
				t.label(labelCode, rc.code)
				loc(t)
				t.label(labelOutcome, sh.outcomeValues[rc.outcome])
				t.label(labelProbe, p.name)
				t.end(float64(rc.n))
			}
		}},
		{name: "toolpulse_validated_items", empty: !validated, series: perProbe("toolpulse_validated_items", func(p *probe) (float64, bool) {
			return p.validated, p.hasValidated
		})},
	}
	for i := range families {
		f := &families[i]
		f.help, f.typ = familyHelp[f.name], familyTypes[f.name]
		if len(probes) == 0 && f.name != "toolpulse_probe_info" {
			f.empty = true
		}
	}
	if m.info.len() == 0 {
		families[4].empty = true
	}
	return families
}

// familyTypes are the types of the streamed families.
var familyTypes = map[string]string{
	"toolpulse_attempts_total": "counter", "toolpulse_drift_events_total": "counter",
	"toolpulse_last_outcome": "gauge", "toolpulse_last_run_timestamp_seconds": "gauge",
	"toolpulse_probe_info": "gauge", "toolpulse_retried_runs_total": "counter",
	"toolpulse_run_duration_seconds": "histogram", "toolpulse_runs_total": "counter",
	"toolpulse_validated_items": "gauge",
}

// sortedIndexes returns the indexes of values in the order of the values.
func sortedIndexes(values []string) []int {
	idx := make([]int, len(values))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(values[a], values[b]) })
	return idx
}
