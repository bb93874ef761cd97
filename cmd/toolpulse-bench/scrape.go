package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// scrapeStats describes the scrapes of the daemon's /metrics that the run
// mode made, as a Prometheus server would, so that their CPU and memory
// are in the numbers: at 10,000 probes a scrape builds some 120,000
// series.
type scrapeStats struct {
	// EverySeconds is --scrape-every; 0 when the bench did not scrape.
	EverySeconds float64 `json:"every_s"`
	Count        int     `json:"count"`
	Failed       int     `json:"failed"`
	P50MS        float64 `json:"p50_ms"`
	MaxMS        float64 `json:"max_ms"`
	// Bytes is the size of the last successful scrape's body.
	Bytes int64 `json:"bytes"`
	// FirstError is the first failed scrape's error, "" without one.
	FirstError string `json:"first_error"`
}

// scrapeLoop scrapes the daemon's /metrics every interval until stop is
// called; stop waits for a scrape in flight and returns what was seen.
// every 0 scrapes nothing.
func (s *session) scrapeLoop(ctx context.Context, every time.Duration) (stop func() scrapeStats) {
	st := scrapeStats{EverySeconds: every.Seconds()}
	if every <= 0 {
		return func() scrapeStats { return st }
	}
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg    sync.WaitGroup
		took  []int64
		mu    sync.Mutex // guards st and took until wg is done
		ticks = time.NewTicker(every)
	)
	wg.Go(func() {
		defer ticks.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks.C:
			}
			t0 := time.Now()
			n, err := s.scrapeOnce(ctx)
			if ctx.Err() != nil {
				return // stopped mid-scrape: not the daemon's failure
			}
			mu.Lock()
			st.Count++
			if err != nil {
				st.Failed++
				if st.FirstError == "" {
					st.FirstError = err.Error()
				}
			} else {
				took = append(took, int64(time.Since(t0)))
				st.Bytes = n
			}
			mu.Unlock()
		}
	})
	return func() scrapeStats {
		cancel()
		wg.Wait()
		if len(took) > 0 {
			slices.Sort(took)
			st.P50MS, st.MaxMS = nsMS(nearestRank(took, 50)), nsMS(took[len(took)-1])
		}
		return st
	}
}

// scrapeOnce reads the whole of /metrics and returns its size.
func (s *session) scrapeOnce(ctx context.Context) (int64, error) {
	resp, err := getOK(ctx, s.client, "http://"+s.listen+"/metrics")
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, fmt.Errorf("GET /metrics: reading the body: %w", err)
	}
	return n, nil
}
