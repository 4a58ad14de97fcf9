// Package metrics exports an lshdb server's figures in Prometheus's
// format: requests and their latency per operation, candidates per query,
// in-flight requests, and the index's storage-engine figures (documents,
// compactions, level 0, block cache, write-ahead log) read from
// db.(*DB).Metrics at each scrape.
//
//	m := metrics.New(d)
//	api := httpapi.Handler(d, &httpapi.Options{Hooks: m.Hooks()})
//	mux.Handle("/metrics", m.Handler())
//
// It is a package of its own so that programs that import the API or the
// client do not import Prometheus's client.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds one server's collectors, in a registry of its own (no
// global state: two servers in one process do not mix their figures).
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	errors     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	inFlight   *prometheus.GaugeVec
	candidates *prometheus.HistogramVec
}

// New returns the collectors of a server of d, registered with the Go
// runtime's and the process's.
func New(d *db.DB) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lshdb_http_requests_total", Help: "Requests by operation and the HTTP status sent (a stream that fails after its 200 counts as 200 here: lshdb_http_request_errors_total counts it by its error code).",
		}, []string{"op", "status"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lshdb_http_request_errors_total",
			Help: "Requests that ended with an error, by operation and error code (httpapi.Codes), streams that failed after their 200 included.",
		}, []string{"op", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lshdb_http_request_duration_seconds", Help: "Time to answer a request, by operation (a stream: to its end).",
			// NB: from 100 µs (a warm query) to a minute (a check or pairs
			// on a large index).
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"op"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lshdb_http_requests_in_flight", Help: "Requests being answered, by operation.",
		}, []string{"op"}),
		candidates: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lshdb_query_candidates", Help: "Candidates a query verified (documents sharing a band with it).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}, []string{"op"}),
	}
	for _, op := range httpapi.Ops {
		// NB: every operation is exported from the start, at zero, so
		// that rates and alerts have a series before the first request.
		m.latency.WithLabelValues(op)
		m.inFlight.WithLabelValues(op)
	}
	m.candidates.WithLabelValues("query")
	m.reg.MustRegister(m.requests, m.errors, m.latency, m.inFlight, m.candidates, &dbCollector{d: d},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, for a program that adds its own
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Hooks returns the hooks that feed the request metrics, for
// httpapi.Options.Hooks.
func (m *Metrics) Hooks() httpapi.Hooks {
	return httpapi.Hooks{
		Start: func(ctx context.Context, op string) { m.inFlight.WithLabelValues(op).Inc() },
		Done: func(ctx context.Context, op string, status int, err error, elapsed time.Duration) {
			m.requests.WithLabelValues(op, strconv.Itoa(status)).Inc()
			if err != nil {
				m.errors.WithLabelValues(op, httpapi.CodeOf(err)).Inc()
			}
			m.latency.WithLabelValues(op).Observe(elapsed.Seconds())
			m.inFlight.WithLabelValues(op).Dec()
		},
		Query: func(op string, candidates int) { m.candidates.WithLabelValues(op).Observe(float64(candidates)) },
	}
}
