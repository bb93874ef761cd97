package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/toolpulse/toolpulse/results"
)

// Label names of the per-probe series.
const (
	labelProbe   = "probe"
	labelOutcome = "outcome"
	labelCode    = "code"
	labelKind    = "kind"
	// labelLocation is the instance's fleet.location (SPEC §13): every
	// run of an instance is from its one location, so the pair is the
	// same on every per-probe series of a Metrics.
	labelLocation = "location"
)

// sharedMessages are the messages a series has whatever its probe: label
// names, the outcome and non-custom code label pairs, the 0 and 1 of the
// last-outcome gauges, the buckets no run reached and the bucket bounds.
// New creates them once and scrapes only read them, so concurrent scrapes
// hand out the same ones. (The protobuf encoder caches a message's size
// in it, but atomically: client_golang shares const label pairs the same
// way.)
type sharedMessages struct {
	probeName, outcomeName, codeName string
	// location is the location="..." pair of every per-probe series of
	// an instance that names a location; hasLocation is false for one in
	// the default location, whose series read as they always did.
	locationName, locationValue string
	location                    dto.LabelPair
	hasLocation                 bool
	outcomeValues               [3]string
	// outcomes are the outcome="..." pairs, by outcomeIndex.
	outcomes [3]dto.LabelPair
	// kinds are the kind="..." pairs of the drift counter, by
	// driftKindIndex.
	kindName   string
	kindValues [2]string
	kinds      [2]dto.LabelPair
	// codes are the code="..." pairs of NoCode, OtherCode and every
	// built-in code, by label value.
	codes map[string]*dto.LabelPair
	// lastOutcome[1] is the last-outcome gauge of the last run's outcome,
	// lastOutcome[0] that of the other two.
	lastOutcome [2]dto.Gauge
	values      [2]float64 // 0 and 1
	// unreached[i] is bucket i of a probe none of whose runs took at most
	// bounds[i] seconds: its cumulative count is 0.
	unreached [nBuckets]dto.Bucket
	zero      uint64
	bounds    [nBuckets]float64
}

// newSharedMessages returns the shared messages; builtin lists the codes
// that always get their own code label value, and location is the
// instance's.
func newSharedMessages(builtin map[results.Code]bool, location string) *sharedMessages {
	sh := &sharedMessages{
		locationName:  labelLocation,
		locationValue: location,
		probeName:     labelProbe,
		outcomeName:   labelOutcome,
		codeName:      labelCode,
		values:        [2]float64{0, 1},
		bounds:        durationBuckets,
		codes:         make(map[string]*dto.LabelPair, len(builtin)+2),
	}
	sh.location.Name, sh.location.Value = &sh.locationName, &sh.locationValue
	sh.hasLocation = location != results.DefaultLocation
	for i, o := range results.Outcomes {
		sh.outcomeValues[i] = string(o)
		sh.outcomes[i].Name, sh.outcomes[i].Value = &sh.outcomeName, &sh.outcomeValues[i]
	}
	sh.kindName = labelKind
	for i, k := range driftKinds {
		sh.kindValues[i] = string(k)
		sh.kinds[i].Name, sh.kinds[i].Value = &sh.kindName, &sh.kindValues[i]
	}
	for i := range sh.lastOutcome {
		sh.lastOutcome[i].Value = &sh.values[i]
	}
	for i := range sh.unreached {
		sh.unreached[i].CumulativeCount, sh.unreached[i].UpperBound = &sh.zero, &sh.bounds[i]
	}
	sh.codes[NoCode] = newLabelPair(&sh.codeName, NoCode)
	sh.codes[OtherCode] = newLabelPair(&sh.codeName, OtherCode)
	for c := range builtin {
		sh.codes[string(c)] = newLabelPair(&sh.codeName, string(c))
	}
	return sh
}

// codePair returns the pair code=value: a shared one for the values any
// probe can have, a new one for a custom code.
func (sh *sharedMessages) codePair(value string) *dto.LabelPair {
	if lp := sh.codes[value]; lp != nil {
		return lp
	}
	return newLabelPair(&sh.codeName, value)
}

// newLabelPair returns the pair *name=value.
func newLabelPair(name *string, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: name, Value: &value}
}

// probeScrape holds what one scrape shows of one probe: its series
// other than the runs series, the messages they point at and the numbers
// those point at, in one element of an arena. Each series is a
// prometheus.Metric of its own, with label pairs of its own sorted by
// name (code < kind < location < outcome < probe); Write points the registry's message at
// them and copies nothing. All is filled in before the first series is
// sent and never written afterwards, so Write may run at any time, as
// often as asked, while other scrapes run.
type probeScrape struct {
	name    string
	probe   dto.LabelPair // probe=name, on every series of the probe
	created timestamppb.Timestamp
	// zero is every counter of the probe that is still at 0: they were
	// all created with the probe. The others are counterScrapes.
	zero dto.Counter

	attempts           probeCounter
	drifts             [2]kindCounter    // by driftKindIndex
	retried            [3]outcomeCounter // by outcomeIndex
	duration           probeHistogram
	last               [3]outcomeGauge // by outcomeIndex
	lastRun, validated probeGauge
}

// init sets the probe label pair, the created timestamp and the zero
// counter of s, the scrape of p.
func (s *probeScrape) init(p *probe, sh *sharedMessages) {
	s.name = p.name
	s.probe.Name, s.probe.Value = &sh.probeName, &s.name
	setTimestamp(&s.created, p.created)
	s.zero.Value, s.zero.CreatedTimestamp = &sh.values[0], &s.created
}

// setTimestamp sets ts to ns Unix nanoseconds, as timestamppb.New does
// for time.Unix(0, ns).
func setTimestamp(ts *timestamppb.Timestamp, ns int64) {
	t := time.Unix(0, ns)
	ts.Seconds, ts.Nanos = t.Unix(), int32(t.Nanosecond())
}

// counterScrape is a counter message of a probe that is not at 0.
type counterScrape struct {
	counter dto.Counter
	value   float64
}

// bucketScrape is a duration bucket that some run of a probe reached.
type bucketScrape struct {
	bucket     dto.Bucket
	cumulative uint64
}

// runCounter is a runs series: labelled code, outcome and probe, with a
// counter message and created timestamp of its own.
type runCounter struct {
	desc    *prometheus.Desc
	labels  [4]*dto.LabelPair
	nl      int // labels used: location only when the instance names one
	counter dto.Counter
	n       float64
	created timestamppb.Timestamp
}

// Desc returns the description of toolpulse_runs_total.
func (s *runCounter) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and counter.
func (s *runCounter) Write(m *dto.Metric) error {
	m.Label, m.Counter = s.labels[:s.nl:s.nl], &s.counter
	return nil
}

// probeCounter is a counter series labelled with its probe alone.
type probeCounter struct {
	desc    *prometheus.Desc
	labels  [2]*dto.LabelPair
	nl      int // labels used: location only when the instance names one
	counter *dto.Counter
}

// Desc returns the description of the series' metric.
func (s *probeCounter) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and counter.
func (s *probeCounter) Write(m *dto.Metric) error {
	m.Label, m.Counter = s.labels[:s.nl:s.nl], s.counter
	return nil
}

// kindCounter is a drift counter series, labelled kind and probe.
type kindCounter struct {
	desc    *prometheus.Desc
	labels  [3]*dto.LabelPair
	nl      int // labels used: location only when the instance names one
	counter *dto.Counter
}

// Desc returns the description of the series' metric.
func (s *kindCounter) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and counter.
func (s *kindCounter) Write(m *dto.Metric) error {
	m.Label, m.Counter = s.labels[:s.nl:s.nl], s.counter
	return nil
}

// outcomeCounter is a counter series labelled outcome and probe.
type outcomeCounter struct {
	desc    *prometheus.Desc
	labels  [3]*dto.LabelPair
	nl      int // labels used: location only when the instance names one
	counter *dto.Counter
}

// Desc returns the description of the series' metric.
func (s *outcomeCounter) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and counter.
func (s *outcomeCounter) Write(m *dto.Metric) error {
	m.Label, m.Counter = s.labels[:s.nl:s.nl], s.counter
	return nil
}

// probeGauge is a gauge series labelled with its probe alone, with a
// gauge message of its own.
type probeGauge struct {
	desc   *prometheus.Desc
	labels [2]*dto.LabelPair
	nl     int // labels used: location only when the instance names one
	gauge  dto.Gauge
	value  float64
}

// Desc returns the description of the series' metric.
func (s *probeGauge) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and gauge.
func (s *probeGauge) Write(m *dto.Metric) error {
	m.Label, m.Gauge = s.labels[:s.nl:s.nl], &s.gauge
	return nil
}

// outcomeGauge is a gauge series labelled outcome and probe, whose gauge
// message is one of the shared 0 and 1.
type outcomeGauge struct {
	desc   *prometheus.Desc
	labels [3]*dto.LabelPair
	nl     int // labels used: location only when the instance names one
	gauge  *dto.Gauge
}

// Desc returns the description of the series' metric.
func (s *outcomeGauge) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and gauge.
func (s *outcomeGauge) Write(m *dto.Metric) error {
	m.Label, m.Gauge = s.labels[:s.nl:s.nl], s.gauge
	return nil
}

// probeHistogram is a histogram series labelled with its probe alone.
type probeHistogram struct {
	desc      *prometheus.Desc
	labels    [2]*dto.LabelPair
	nl        int // labels used: location only when the instance names one
	histogram dto.Histogram
	buckets   [nBuckets]*dto.Bucket
	count     uint64
	sum       float64
}

// Desc returns the description of the series' metric.
func (s *probeHistogram) Desc() *prometheus.Desc { return s.desc }

// Write points m at the series' labels and histogram.
func (s *probeHistogram) Write(m *dto.Metric) error {
	m.Label, m.Histogram = s.labels[:s.nl:s.nl], &s.histogram
	return nil
}

// put copies pairs, sorted by name, into dst with the location pair in its
// place among them when the instance names a location, and returns how
// many it put. dst has room for one more than pairs.
func (sh *sharedMessages) put(dst []*dto.LabelPair, pairs ...*dto.LabelPair) int {
	n := 0
	placed := !sh.hasLocation
	for _, p := range pairs {
		if !placed && *p.Name > labelLocation {
			dst[n], n, placed = &sh.location, n+1, true
		}
		dst[n], n = p, n+1
	}
	if !placed {
		dst[n], n = &sh.location, n+1
	}
	return n
}
