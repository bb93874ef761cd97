package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// soakOptions are the flags of the soak mode.
type soakOptions struct {
	loadOptions
	reloadEvery time.Duration
	sampleEvery time.Duration
}

func parseSoakFlags(args []string, stderr io.Writer) (soakOptions, error) {
	var o soakOptions
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs, loadOptions{
		probes: 200, interval: time.Second, jitter: time.Second, warmup: -1, duration: 10 * time.Minute,
		mix: benchMix{Pass: 94, ContractError: 3, Unavailable: 3}, items: 20, responseBytes: 2048,
		maxAttempts: 1, maxConcurrency: 64, timeout: 5 * time.Second,
	})
	fs.DurationVar(&o.reloadEvery, "reload-every", 30*time.Second, "send SIGHUP this often, switching between two configs that swap a tenth of the probes")
	fs.DurationVar(&o.sampleEvery, "sample-every", 5*time.Second, "read the daemon's memory, threads and /metrics this often")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: toolpulse-bench soak [flags]
       toolpulse-bench --soak DURATION [flags]

Runs the real `+"`toolpulse run`"+` for --duration under a mixed load (passing,
failing, flapping and drifting providers; alerts firing and resolving),
reloads it with SIGHUP every --reload-every, samples its memory and
goroutines, and says whether they stayed flat. Exits 1 unless they did.

`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if err := o.validate(); err != nil {
		return o, &usageError{err}
	}
	if o.reloadEvery <= 0 || o.sampleEvery <= 0 {
		return o, &usageError{fmt.Errorf("--reload-every and --sample-every must be positive")}
	}
	return o, nil
}

// errNotFlat is the soak's failure: memory or goroutines grew, or the run
// was too short to tell.
var errNotFlat = errors.New("not flat")

func runSoakMode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseSoakFlags(args, stderr)
	if err != nil {
		return err
	}
	rep, err := benchSoak(ctx, opts, stderr)
	if rep != nil {
		if werr := writeRunOutput(stdout, opts.jsonPath, rep); werr != nil && err == nil {
			err = werr
		}
	}
	if err == nil && rep.Verdict.Verdict != verdictFlat {
		err = fmt.Errorf("%w: %s", errNotFlat, rep.Verdict.Reason)
	}
	return err
}

// soakReport is everything the soak mode measured; --json writes it as is.
type soakReport struct {
	benchHeader             // mode "soak"
	Toolpulse     string    `json:"toolpulse"`
	Setup         loadSetup `json:"setup"`
	ReloadEveryMS float64   `json:"reload_every_ms"`
	SampleEveryMS float64   `json:"sample_every_ms"`
	// SwappedProbes is how many probes the two configs do not share.
	SwappedProbes  int            `json:"swapped_probes"`
	FlappingProbes int            `json:"flapping_probes"`
	DriftingProbes int            `json:"drifting_probes"`
	Reloads        reloadCounts   `json:"reloads"`
	Samples        []soakSample   `json:"samples"`
	Verdict        soakVerdict    `json:"verdict"`
	Operations     soakOps        `json:"operations"`
	SlackMessages  map[string]int `json:"slack_messages"`
	Daemon         daemonHealth   `json:"daemon"`
	Notes          []string       `json:"notes"`
	Profiles       *profilePaths  `json:"profiles"`
	KeptIn         string         `json:"kept_in"`
}

type reloadCounts struct {
	Sent int `json:"sent"`
	// Confirmed reloads are those after which /api/v1/probes listed
	// exactly the new config's probes, within 10 seconds.
	Confirmed int `json:"confirmed"`
	// How long after SIGHUP the new probes were listed, over the
	// confirmed reloads (polled every 100ms).
	ConfirmP50MS float64 `json:"confirm_p50_ms"`
	ConfirmMaxMS float64 `json:"confirm_max_ms"`
}

type soakOps struct {
	Runs           int `json:"runs"`
	Pass           int `json:"pass"`
	ContractError  int `json:"contract_error"`
	Unavailable    int `json:"unavailable"`
	ResultsDropped int `json:"results_dropped"`
	StoreErrors    int `json:"store_errors"`
}

// The daemon's Go runtime metrics (its /metrics prefixes them toolpulse_,
// as every name it exports) that the soak judges by, when they are there.
const (
	goroutinesMetric = "toolpulse_go_goroutines"
	heapInuseMetric  = "toolpulse_go_memstats_heap_inuse_bytes"
)

// soakSample is one reading of the daemon. Goroutines and HeapInuseBytes
// are null when its /metrics does not export the Go collector.
type soakSample struct {
	Seconds        float64 `json:"t_s"`
	RSSBytes       int64   `json:"rss_bytes"`
	Threads        int     `json:"threads"`
	CPUSeconds     float64 `json:"cpu_seconds"`
	Goroutines     *int    `json:"goroutines"`
	HeapInuseBytes *int64  `json:"heap_inuse_bytes"`
	// Runs is toolpulse_runs_total summed over the probes configured at
	// the time: a reload drops the series of the probes it removes.
	Runs   int64 `json:"runs_total"`
	Probes int   `json:"probes"`
}

// The soak's verdict and its tolerances.
const (
	verdictFlat         = "flat"
	verdictGrowing      = "growing"
	verdictInconclusive = "inconclusive"

	// soakWarmup is the share of the run before the goroutine baseline.
	soakWarmup = 0.20
	// The last quarter's median memory may exceed the second quarter's by
	// memGrowth plus memSlack.
	memGrowth = 0.20
	memSlack  = 8 << 20
	// Goroutines (or threads) at the end may exceed those after the
	// warm-up by countGrowth, and at least by countSlack.
	countGrowth = 0.10
	countSlack  = 10
	// minSoak is the shortest run whose verdict means anything: a few
	// minutes of reloads and alerts, and enough samples per quarter.
	minSoak           = 2 * time.Minute
	minQuarterSamples = 3
)

type soakVerdict struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	// MemoryMetric is heapInuseMetric, or VmRSS without it.
	MemoryMetric             string `json:"memory_metric"`
	SecondQuarterMedianBytes int64  `json:"second_quarter_median_bytes"`
	LastQuarterMedianBytes   int64  `json:"last_quarter_median_bytes"`
	MemoryLimitBytes         int64  `json:"memory_limit_bytes"`
	// CountMetric is goroutinesMetric, or OS threads without it.
	CountMetric string `json:"count_metric"`
	AfterWarmup int    `json:"after_warmup"`
	AtEnd       int    `json:"at_end"`
	CountLimit  int    `json:"count_limit"`
	Tolerance   string `json:"tolerance"`
}

// judgeSoak decides whether memory and goroutines stayed flat over a run
// of duration d. Medians are compared, not peaks: the heap is a saw tooth
// between collections, and one sample at a tooth's top proves nothing.
func judgeSoak(samples []soakSample, d time.Duration) soakVerdict {
	v := soakVerdict{
		MemoryMetric: heapInuseMetric, CountMetric: goroutinesMetric,
		Tolerance: fmt.Sprintf("memory: last-quarter median ≤ second-quarter median × %.2f + %s; count: end ≤ after warm-up (%.0f %% of the run) + max(%.0f %%, %d)",
			1+memGrowth, humanBytes(memSlack), soakWarmup*100, countGrowth*100, countSlack),
	}
	if len(samples) == 0 {
		v.Verdict, v.Reason = verdictInconclusive, "no samples"
		return v
	}
	heap, goroutines := true, true
	for _, s := range samples {
		heap = heap && s.HeapInuseBytes != nil
		goroutines = goroutines && s.Goroutines != nil
	}
	mem := func(s soakSample) int64 {
		if heap {
			return *s.HeapInuseBytes
		}
		return s.RSSBytes
	}
	count := func(s soakSample) int {
		if goroutines {
			return *s.Goroutines
		}
		return s.Threads
	}
	if !heap {
		v.MemoryMetric = "VmRSS"
	}
	if !goroutines {
		v.CountMetric = "threads"
	}
	total := d.Seconds()
	var q2, q4 []int64
	baseline := -1
	for _, s := range samples {
		switch f := s.Seconds / total; {
		case f >= 0.25 && f < 0.5:
			q2 = append(q2, mem(s))
		case f >= 0.75:
			q4 = append(q4, mem(s))
		}
		if baseline < 0 && s.Seconds/total >= soakWarmup {
			baseline = count(s)
		}
	}
	if baseline < 0 {
		baseline = count(samples[len(samples)-1])
	}
	v.AfterWarmup, v.AtEnd = baseline, count(samples[len(samples)-1])
	v.CountLimit = baseline + max(int(float64(baseline)*countGrowth), countSlack)
	if len(q2) > 0 && len(q4) > 0 {
		v.SecondQuarterMedianBytes, v.LastQuarterMedianBytes = median(q2), median(q4)
		v.MemoryLimitBytes = int64(float64(v.SecondQuarterMedianBytes)*(1+memGrowth)) + memSlack
	}

	var grew []string
	if len(q2) > 0 && len(q4) > 0 && v.LastQuarterMedianBytes > v.MemoryLimitBytes {
		grew = append(grew, fmt.Sprintf("%s grew from %s to %s (limit %s)", v.MemoryMetric,
			humanBytes(v.SecondQuarterMedianBytes), humanBytes(v.LastQuarterMedianBytes), humanBytes(v.MemoryLimitBytes)))
	}
	if v.AtEnd > v.CountLimit {
		grew = append(grew, fmt.Sprintf("%s grew from %d to %d (limit %d)", v.CountMetric, v.AfterWarmup, v.AtEnd, v.CountLimit))
	}
	computed := verdictFlat
	if len(grew) > 0 {
		computed = verdictGrowing
	}
	switch {
	case d < minSoak || len(q2) < minQuarterSamples || len(q4) < minQuarterSamples:
		v.Verdict = verdictInconclusive
		v.Reason = fmt.Sprintf("too short to judge: %s with %d and %d samples in the second and last quarters; a verdict needs %s and %d each (it would read %s)",
			d, len(q2), len(q4), minSoak, minQuarterSamples, computed)
	case len(grew) > 0:
		v.Verdict, v.Reason = verdictGrowing, strings.Join(grew, "; ")
	default:
		v.Verdict = verdictFlat
		v.Reason = fmt.Sprintf("%s %s → %s (limit %s); %s %d → %d (limit %d)", v.MemoryMetric,
			humanBytes(v.SecondQuarterMedianBytes), humanBytes(v.LastQuarterMedianBytes), humanBytes(v.MemoryLimitBytes),
			v.CountMetric, v.AfterWarmup, v.AtEnd, v.CountLimit)
	}
	return v
}

func median(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// soakSpecials makes every 20th probe flap between failing and passing
// and the next one drift between the two layouts select_results accepts.
func soakSpecials(total int, o soakOptions) (specials []specialProbe, flapping, drifting int) {
	flap := min(max(o.duration/20, 2*o.interval), 30*time.Second)
	for i := range total {
		switch i % 20 {
		case 1:
			specials = append(specials, specialProbe{Probe: i, Kind: specialFlap, Period: flap})
			flapping++
		case 2:
			specials = append(specials, specialProbe{Probe: i, Kind: specialDrift, Period: 2 * flap})
			drifting++
		}
	}
	return specials, flapping, drifting
}

// benchSoak runs the soak mode. It returns the report whenever the run
// completed, with an error when the daemon misbehaved.
func benchSoak(ctx context.Context, o soakOptions, stderr io.Writer) (*soakReport, error) {
	prog := newProgress(stderr)
	if _, err := sqliteVersion(ctx); err != nil {
		return nil, fmt.Errorf("the sqlite3 shell is required (Debian package sqlite3): %w", err)
	}
	swapped := max(1, o.probes/10)
	total := o.probes + swapped
	specials, flapping, drifting := soakSpecials(total, o)
	spec := providerSpec{
		Probes: total, Items: o.items, ResponseBytes: o.responseBytes, Mix: o.mix,
		Capacity: min(arrivalCapacity(o.loadOptions), 1024), Special: specials,
	}
	s, err := newSession(ctx, o.loadOptions, spec, prog)
	if err != nil {
		return nil, err
	}
	defer s.close()

	// Config a holds probes [0, probes); config b swaps its last tenth
	// for the probes after it. Both hold as many probes.
	var configs [2][]int
	for i := range o.probes {
		configs[0] = append(configs[0], i)
		if i < o.probes-swapped {
			configs[1] = append(configs[1], i)
		}
	}
	for i := o.probes; i < total; i++ {
		configs[1] = append(configs[1], i)
	}
	if err := s.writeConfig(configs[0]); err != nil {
		return nil, err
	}

	rep := &soakReport{
		benchHeader: newBenchHeader("soak"), Toolpulse: s.bin,
		Setup:         newLoadSetup(o.loadOptions, s),
		ReloadEveryMS: ms(o.reloadEvery), SampleEveryMS: ms(o.sampleEvery),
		SwappedProbes: swapped, FlappingProbes: flapping, DriftingProbes: drifting,
		Samples: []soakSample{}, Notes: []string{}, Profiles: s.profilePaths(),
	}
	rep.Setup.WarmupMS = ms(time.Duration(float64(o.duration) * soakWarmup))
	if o.keep != "" {
		rep.KeptIn = s.dir
	}

	prog.printf("starting toolpulse run: %s probes every %s; soaking for %s", commas(int64(o.probes)), o.interval, o.duration)
	healthy, err := s.startDaemon(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.provider.setEpoch(ctx, healthy); err != nil {
		return nil, err
	}
	end := healthy.Add(o.duration)
	current := 0
	sampleTick := time.NewTicker(o.sampleEvery)
	defer sampleTick.Stop()
	reloadTick := time.NewTicker(o.reloadEvery)
	defer reloadTick.Stop()
	endTimer := time.NewTimer(time.Until(end))
	defer endTimer.Stop()

	takeSample := func() error {
		sm, err := s.soakSample(ctx, healthy)
		if err != nil {
			return err
		}
		sm.Probes = len(configs[current])
		rep.Samples = append(rep.Samples, sm)
		return nil
	}
	if err := takeSample(); err != nil {
		return nil, err
	}
	var confirms []int64
loop:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.daemon.exited():
			return nil, s.daemonExited()
		case <-endTimer.C:
			break loop
		case <-sampleTick.C:
			if err := takeSample(); err != nil {
				return nil, err
			}
		case <-reloadTick.C:
			if time.Until(end) < time.Second {
				continue // too close to the end to confirm it
			}
			current = 1 - current
			if err := s.writeConfig(configs[current]); err != nil {
				return nil, err
			}
			if err := s.daemon.proc.Signal(syscall.SIGHUP); err != nil {
				return nil, fmt.Errorf("SIGHUP: %w", err)
			}
			rep.Reloads.Sent++
			hup := time.Now()
			ok, err := s.confirmReload(ctx, configs[current], min(10*time.Second, time.Until(end)))
			if err != nil {
				return nil, err
			}
			if ok {
				rep.Reloads.Confirmed++
				confirms = append(confirms, time.Since(hup).Nanoseconds())
				prog.printf("reload %d: %d probes, confirmed after %s", rep.Reloads.Sent, len(configs[current]), time.Since(hup).Round(time.Millisecond))
			} else {
				prog.printf("reload %d: %d probes, NOT confirmed", rep.Reloads.Sent, len(configs[current]))
			}
		}
	}
	if err := takeSample(); err != nil {
		return nil, err
	}
	if len(confirms) > 0 {
		slices.Sort(confirms)
		rep.Reloads.ConfirmP50MS = nsMS(nearestRank(confirms, 50))
		rep.Reloads.ConfirmMaxMS = nsMS(confirms[len(confirms)-1])
	}
	m, err := s.metrics(ctx)
	if err != nil {
		return nil, err
	}
	rep.Operations.ResultsDropped = int(m["toolpulse_results_dropped_total"])
	rep.Operations.StoreErrors = int(m["toolpulse_store_errors_total"])
	if _, ok := m[goroutinesMetric]; !ok {
		rep.Notes = append(rep.Notes, "the daemon's /metrics exports no Go collector ("+goroutinesMetric+", "+heapInuseMetric+"): the verdict uses VmRSS and OS threads from /proc, a coarser signal (threads never shrink, and a leak of goroutines blocked in Go does not add threads)")
	}

	if rep.Daemon, err = s.stopAll(prog); err != nil {
		return nil, err
	}
	st, err := windowStats(ctx, s.dbPath, healthy, end)
	if err != nil {
		return nil, err
	}
	rep.Operations.Runs, rep.Operations.Pass = st.runs, st.pass
	rep.Operations.ContractError, rep.Operations.Unavailable = st.contractError, st.unavailable
	rep.SlackMessages = s.slackMessages()
	rep.Verdict = judgeSoak(rep.Samples, o.duration)

	switch {
	case rep.Daemon.ErrorLines > 0:
		return rep, fmt.Errorf("toolpulse run logged %d error lines; the first: %s", rep.Daemon.ErrorLines, rep.Daemon.FirstErrors[0])
	case rep.Operations.ResultsDropped > 0:
		return rep, fmt.Errorf("toolpulse run dropped %d results (toolpulse_results_dropped_total)", rep.Operations.ResultsDropped)
	case rep.Reloads.Confirmed < rep.Reloads.Sent:
		return rep, fmt.Errorf("%d of %d reloads were not confirmed by /api/v1/probes", rep.Reloads.Sent-rep.Reloads.Confirmed, rep.Reloads.Sent)
	}
	return rep, nil
}

// soakSample reads the daemon's /proc and /metrics.
func (s *session) soakSample(ctx context.Context, since time.Time) (soakSample, error) {
	ps, err := readProcStat(s.daemon.proc.Pid())
	if err != nil {
		return soakSample{}, fmt.Errorf("the daemon's /proc: %w", err)
	}
	sm := soakSample{
		Seconds:  time.Since(since).Seconds(),
		RSSBytes: ps.RSS, Threads: ps.Threads, CPUSeconds: ps.CPU.Seconds(),
	}
	m, err := s.metrics(ctx)
	if err != nil {
		return soakSample{}, err
	}
	sm.Runs = int64(m["toolpulse_runs_total"])
	if v, ok := m[goroutinesMetric]; ok {
		n := int(v)
		sm.Goroutines = &n
	}
	if v, ok := m[heapInuseMetric]; ok {
		n := int64(v)
		sm.HeapInuseBytes = &n
	}
	return sm, nil
}

// confirmReload polls /api/v1/probes until it lists exactly the probes of
// the new config, for at most wait.
func (s *session) confirmReload(ctx context.Context, probes []int, wait time.Duration) (bool, error) {
	want := make(map[string]bool, len(probes))
	for _, i := range probes {
		want[s.names[i]] = true
	}
	deadline := time.Now().Add(wait)
	for {
		got, err := s.listedProbes(ctx)
		if err != nil {
			return false, err
		}
		same := len(got) == len(want)
		for _, name := range got {
			same = same && want[name]
		}
		if same {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-s.daemon.exited():
			return false, s.daemonExited()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *session) listedProbes(ctx context.Context) ([]string, error) {
	resp, err := getOK(ctx, s.client, "http://"+s.listen+"/api/v1/probes")
	if err != nil {
		return nil, fmt.Errorf("GET /api/v1/probes: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Probes []struct {
			Name string `json:"name"`
		} `json:"probes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /api/v1/probes: %w", err)
	}
	names := make([]string, len(body.Probes))
	for i, p := range body.Probes {
		names[i] = p.Name
	}
	return names, nil
}

func writeSoakTable(w io.Writer, r *soakReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	writeHeader(tw, r.benchHeader, r.Toolpulse, r.Setup)
	fmt.Fprintf(tw, "soak\t%s; %d flapping and %d drifting probes; SIGHUP every %s between two configs that swap %d probes\n",
		msDuration(r.Setup.DurationMS), r.FlappingProbes, r.DriftingProbes, msDuration(r.ReloadEveryMS), r.SwappedProbes)
	fmt.Fprintf(tw, "reloads\t%d sent, %d confirmed by /api/v1/probes, after p50 %s, max %s\n", r.Reloads.Sent, r.Reloads.Confirmed,
		msDuration(r.Reloads.ConfirmP50MS).Round(time.Millisecond), msDuration(r.Reloads.ConfirmMaxMS).Round(time.Millisecond))
	ops := r.Operations
	fmt.Fprintf(tw, "runs\t%s: pass %s, contract_error %s, unavailable %s; %d dropped, %d store errors\n",
		commas(int64(ops.Runs)), commas(int64(ops.Pass)), commas(int64(ops.ContractError)), commas(int64(ops.Unavailable)),
		ops.ResultsDropped, ops.StoreErrors)
	fmt.Fprintf(tw, "Slack messages\t%s\n", slackCounts(r.SlackMessages))
	d := r.Daemon
	fmt.Fprintf(tw, "daemon\texit %d, stopped %s after SIGTERM, %d error lines, %d warnings\n", d.ExitCode, msDuration(d.ShutdownMS).Round(time.Millisecond), d.ErrorLines, d.WarnLines)
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "t\tRSS\theap in use\tgoroutines\tthreads\tCPU s\truns_total\tprobes\t\n")
	for _, s := range r.Samples {
		heap, gr := "n/a", "n/a"
		if s.HeapInuseBytes != nil {
			heap = humanBytes(*s.HeapInuseBytes)
		}
		if s.Goroutines != nil {
			gr = fmt.Sprint(*s.Goroutines)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.1f\t%s\t%d\t\n",
			time.Duration(s.Seconds*float64(time.Second)).Round(time.Second), humanBytes(s.RSSBytes), heap, gr,
			s.Threads, s.CPUSeconds, commas(s.Runs), s.Probes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "runs_total is toolpulse_runs_total summed over the probes configured at the time: a reload drops the series of the probes it removes.")
	fmt.Fprintf(w, "\nverdict: %s: %s\n", r.Verdict.Verdict, r.Verdict.Reason)
	fmt.Fprintf(w, "tolerance: %s\n", r.Verdict.Tolerance)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	writeFooter(w, r.Profiles, r.KeptIn)
	return nil
}
