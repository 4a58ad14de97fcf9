package metrics

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape returns the metrics m serves, by name.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the series of name whose labels include
// labels ("k=v" pairs), and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	base, suffix := name, ""
	for _, s := range []string{"_count", "_sum"} {
		if f, ok := strings.CutSuffix(name, s); ok && fams[name] == nil {
			base, suffix = f, s
		}
	}
	f := fams[base]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			found := false
			for _, lp := range m.Label {
				found = found || lp.GetName() == k && lp.GetValue() == v
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil && suffix == "_count":
			return float64(m.Histogram.GetSampleCount()), true
		case m.Histogram != nil && suffix == "_sum":
			return m.Histogram.GetSampleSum(), true
		}
	}
	return 0, false
}

// Ensure that the metrics count the requests served, by operation and
// status, the candidates of each query (as the in-process query counts
// them), and export the index's documents and storage figures.
func TestMetrics(t *testing.T) {
	d, err := db.Open(filepath.Join(t.TempDir(), "idx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	texts := []string{"the quick brown fox jumps over the lazy dog", "the quick brown fox jumps over the lazy dogs",
		"a completely different sentence about owls", "the quick brown fox jumped over the lazy dog"}
	for i, text := range texts {
		if err := d.Put(db.Doc{ID: string(rune('a' + i)), Text: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A deleted document leaves its lists empty, and a purge deletes
	// them (Check counts them first).
	if err := d.Delete("d", nil); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Check(context.Background())
	if err != nil || rep.EmptyLists == 0 {
		t.Fatalf("check after a delete: %d empty lists, %v", rep.EmptyLists, err)
	}
	if _, err := d.PurgeEmptyLists(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := New(d)
	h := httpapi.Handler(d, &httpapi.Options{Hooks: m.Hooks()})
	for _, target := range []string{"/v1/docs?id=a", "/v1/docs?id=b", "/v1/docs?id=zz", "/v1/query?id=a&threshold=0.3", "/nowhere"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
	}
	fams := scrape(t, m)
	want, _ := d.QueryID(context.Background(), "a", &db.QueryOptions{Threshold: 0.3})
	count, _ := d.Count()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"lshdb_http_requests_total", []string{"op=get", "status=200"}, 2},
		{"lshdb_http_requests_total", []string{"op=get", "status=404"}, 1},
		{"lshdb_http_requests_total", []string{"op=query", "status=200"}, 1},
		{"lshdb_http_requests_total", []string{"op=unknown", "status=404"}, 1},
		{"lshdb_http_request_errors_total", []string{"op=get", "code=not_found"}, 1},
		{"lshdb_http_request_duration_seconds_count", []string{"op=get"}, 3},
		{"lshdb_http_request_duration_seconds_count", []string{"op=check"}, 0},
		{"lshdb_http_requests_in_flight", []string{"op=get"}, 0},
		{"lshdb_query_candidates_count", []string{"op=query"}, 1},
		{"lshdb_query_candidates_sum", []string{"op=query"}, float64(want.Candidates)},
		{"lshdb_documents", nil, float64(count)},
		{"lshdb_pebble_level_files", []string{"level=6"}, 0},
		// The one query read each candidate once and cached it; its
		// posting lists were read once each, which the doorkeeper does
		// not cache.
		{"lshdb_query_cache_doc_misses_total", nil, float64(want.Candidates)},
		{"lshdb_query_cache_doc_hits_total", nil, 0},
		{"lshdb_query_cache_docs", nil, float64(want.Candidates)},
		{"lshdb_query_cache_lists", nil, 0},
		{"lshdb_query_cache_list_misses_total", nil, float64(d.Params().Bands.B)},
		{"lshdb_query_cache_list_hits_total", nil, 0},
		// Health: present at 0 before anything goes wrong, so that
		// alerts have a series.
		{"lshdb_damaged", nil, 0},
		{"lshdb_disk_full_refusals_total", nil, 0},
		{"lshdb_disk_reserve_bytes", nil, db.DefaultDiskReserve},
		{"lshdb_expiry_sweep_errors_total", nil, 0},
		{"lshdb_expired_swept_total", nil, 0},
		{"lshdb_expiry_overdue_seconds", nil, 0},
		{"lshdb_list_purges_total", nil, 1},
		{"lshdb_lists_purged_total", nil, float64(rep.EmptyLists)},
		{"lshdb_list_purge_errors_total", nil, 0},
		{"lshdb_list_purges_skipped_total", nil, 0},
	} {
		got, ok := value(fams, c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if want.Candidates == 0 {
		t.Error("the query had no candidates: the candidates metric is untested")
	}
	for _, name := range []string{"lshdb_pebble_wal_bytes_in_total", "lshdb_pebble_memtable_bytes", "lshdb_pebble_disk_bytes", "lshdb_disk_free_bytes"} {
		if v, ok := value(fams, name); !ok || v <= 0 {
			t.Errorf("%s = %v (present %v) after %d synced puts", name, v, ok, len(texts))
		}
	}
	for _, name := range []string{"lshdb_pebble_compactions_total", "lshdb_pebble_l0_sublevels", "lshdb_pebble_cache_hits_total", "lshdb_pebble_wal_files", "lshdb_pebble_wal_obsolete_files",
		"lshdb_pebble_write_stalls_total", "lshdb_pebble_write_stall_seconds_total", "lshdb_expiry_sweeps_total", "go_goroutines"} {
		if _, ok := value(fams, name); !ok {
			t.Errorf("%s is missing", name)
		}
	}
	// A closed index exports no storage figures, and the scrape works.
	d.Close()
	if _, ok := value(scrape(t, m), "lshdb_documents"); ok {
		t.Error("lshdb_documents exported after Close")
	}
}

// Ensure that the metrics say how many writes wait for another to finish
// (writes run one at a time, and a slow load holds every put back: an
// operator's soak review, O4c, saw such puts only as 499 canceled): a
// put behind a load whose documents have not come is counted waiting
// while it waits, and then as one wait, with its time. The oracle: the
// one put the test holds back.
func TestMetricsWritersWaiting(t *testing.T) {
	// NB: no background sweep or purge, which write too.
	d, err := db.Open(filepath.Join(t.TempDir(), "idx"), &db.Options{ExpirySweep: -1, PurgeEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m := New(d)
	holding, release := make(chan struct{}), make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		_, err := d.Load(context.Background(), func(yield func(db.Doc, error) bool) {
			close(holding) // NB: the load holds the writer lock while it reads
			<-release
			yield(db.Doc{ID: "loaded", Text: "a document the load brings once released"}, nil)
		}, nil)
		loaded <- err
	}()
	<-holding
	if v, ok := value(scrape(t, m), "lshdb_writers_waiting"); !ok || v != 0 {
		t.Fatalf("lshdb_writers_waiting %v (present %v) before the put, want 0", v, ok)
	}
	put := make(chan error, 1)
	go func() { put <- d.Put(db.Doc{ID: "put", Text: "a put behind the load"}, nil) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if v, _ := value(scrape(t, m), "lshdb_writers_waiting"); v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the put behind the load was never counted waiting")
		}
	}
	time.Sleep(20 * time.Millisecond) // NB: a wait of at least this
	close(release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if err := <-put; err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	for _, c := range []struct {
		name string
		ok   func(float64) bool
		want string
	}{
		{"lshdb_writers_waiting", func(v float64) bool { return v == 0 }, "0"},
		{"lshdb_writer_waits_total", func(v float64) bool { return v == 1 }, "1"},
		{"lshdb_writer_wait_seconds_total", func(v float64) bool { return v >= 0.02 }, "at least 0.02"},
	} {
		if v, ok := value(fams, c.name); !ok || !c.ok(v) {
			t.Errorf("%s = %v (present %v) after the put, want %s", c.name, v, ok, c.want)
		}
	}
}
