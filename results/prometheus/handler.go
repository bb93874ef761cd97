package prometheus

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// maxScrapesInFlight bounds concurrent /metrics requests: gathering is
// cheap, but a scrape storm should not pile up goroutines in the daemon.
const maxScrapesInFlight = 8

// NewRegistry returns an empty registry for New and Handler. It registers
// no Go runtime or process collectors, whose go_ and process_ names would
// break the toolpulse_ prefix every metric has (SPEC §9). It exists so that
// cmd wires metrics without importing client_golang itself.
func NewRegistry() *prometheus.Registry {
	return prometheus.NewRegistry()
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
