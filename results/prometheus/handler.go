package prometheus

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxScrapesInFlight bounds concurrent /metrics requests: gathering is
// cheap, but a scrape storm should not pile up goroutines in the daemon.
const maxScrapesInFlight = 8

// NewRegistry returns the registry for New and Handler, with the Go
// runtime and process collectors already on it. Their metrics are renamed
// under the toolpulse_ prefix every metric has (SPEC §9):
// toolpulse_go_goroutines, toolpulse_go_memstats_heap_inuse_bytes,
// toolpulse_process_resident_memory_bytes and the rest of what the
// default collectors export. Process metrics are only there on platforms
// client_golang can read them on (Linux, macOS, Windows). It exists so
// that cmd wires metrics without importing client_golang itself.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	// Two collectors on an empty registry cannot collide: a failure here
	// is a programming error, so MustRegister.
	prometheus.WrapRegistererWithPrefix("toolpulse_", reg).MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves the metrics g gathers in the Prometheus exposition
// formats (text unless the scraper asks for protobuf). A gathering error
// fails the whole scrape with HTTP 500 and the error text, so that it
// shows as a failed scrape instead of silently missing series. Responses
// are not compressed: /metrics is served on loopback or a private address.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.HTTPErrorOnError,
		DisableCompression:  true,
		MaxRequestsInFlight: maxScrapesInFlight,
	})
}
