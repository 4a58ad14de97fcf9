package metrics

import (
	"strconv"

	"github.com/lshdb/lshdb/db"
	"github.com/prometheus/client_golang/prometheus"
)

// dbCollector reads db.(*DB).Metrics at each scrape.
type dbCollector struct{ d *db.DB }

type desc struct {
	d     *prometheus.Desc
	kind  prometheus.ValueType
	value func(m *db.Metrics) float64
}

func gauge(name, help string, f func(m *db.Metrics) float64) desc {
	return desc{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, f}
}

func counter(name, help string, f func(m *db.Metrics) float64) desc {
	return desc{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, f}
}

var (
	descs = []desc{
		gauge("lshdb_documents", "Stored documents.", func(m *db.Metrics) float64 { return float64(m.Docs) }),
		counter("lshdb_pebble_compactions_total", "Compactions run since the index was opened.", func(m *db.Metrics) float64 { return float64(m.Compactions) }),
		gauge("lshdb_pebble_compactions_in_progress", "Compactions running.", func(m *db.Metrics) float64 { return float64(m.CompactionsInProgress) }),
		gauge("lshdb_pebble_compaction_debt_bytes", "Estimated bytes to compact before the tree is stable.", func(m *db.Metrics) float64 { return float64(m.CompactionDebt) }),
		counter("lshdb_pebble_compaction_seconds_total", "Time spent compacting.", func(m *db.Metrics) float64 { return m.CompactionTime.Seconds() }),
		counter("lshdb_pebble_flushes_total", "Memtable flushes.", func(m *db.Metrics) float64 { return float64(m.Flushes) }),
		counter("lshdb_pebble_ingests_total", "Table ingests (bulk loads).", func(m *db.Metrics) float64 { return float64(m.Ingests) }),
		gauge("lshdb_pebble_l0_files", "Tables in level 0.", func(m *db.Metrics) float64 { return float64(m.L0Files) }),
		gauge("lshdb_pebble_l0_sublevels", "Sublevels of level 0 (its read amplification).", func(m *db.Metrics) float64 { return float64(m.L0Sublevels) }),
		gauge("lshdb_pebble_read_amplification", "Tables a point read may consult.", func(m *db.Metrics) float64 { return float64(m.ReadAmp) }),
		gauge("lshdb_pebble_cache_bytes", "Block cache bytes in use.", func(m *db.Metrics) float64 { return float64(m.CacheBytes) }),
		gauge("lshdb_pebble_cache_blocks", "Blocks in the block cache.", func(m *db.Metrics) float64 { return float64(m.CacheCount) }),
		counter("lshdb_pebble_cache_hits_total", "Block cache hits.", func(m *db.Metrics) float64 { return float64(m.CacheHits) }),
		counter("lshdb_pebble_cache_misses_total", "Block cache misses.", func(m *db.Metrics) float64 { return float64(m.CacheMisses) }),
		gauge("lshdb_pebble_memtable_bytes", "Memtable bytes.", func(m *db.Metrics) float64 { return float64(m.MemTableBytes) }),
		gauge("lshdb_pebble_memtables", "Memtables.", func(m *db.Metrics) float64 { return float64(m.MemTables) }),
		gauge("lshdb_pebble_wal_files", "Live write-ahead log files.", func(m *db.Metrics) float64 { return float64(m.WALFiles) }),
		gauge("lshdb_pebble_wal_bytes", "Live data in the write-ahead log.", func(m *db.Metrics) float64 { return float64(m.WALBytes) }),
		gauge("lshdb_pebble_wal_physical_bytes", "Size on disk of the live write-ahead log files as Pebble last measured it: the current log's when it was opened (0 for a new one), so it lags lshdb_pebble_wal_bytes while that log fills.", func(m *db.Metrics) float64 { return float64(m.WALPhysicalSize) }),
		gauge("lshdb_pebble_wal_obsolete_files", "Write-ahead log files no longer live, kept on disk to be recycled as the next logs.", func(m *db.Metrics) float64 { return float64(m.WALObsoleteFiles) }),
		gauge("lshdb_pebble_wal_obsolete_bytes", "Size on disk of the write-ahead log files kept for recycling.", func(m *db.Metrics) float64 { return float64(m.WALObsoleteSize) }),
		counter("lshdb_pebble_wal_bytes_in_total", "Logical bytes written to the write-ahead log.", func(m *db.Metrics) float64 { return float64(m.WALBytesIn) }),
		counter("lshdb_pebble_wal_bytes_written_total", "Physical bytes written to the write-ahead log.", func(m *db.Metrics) float64 { return float64(m.WALBytesWritten) }),
		gauge("lshdb_pebble_disk_bytes", "Bytes of the store's files on disk.", func(m *db.Metrics) float64 { return float64(m.DiskBytes) }),
		counter("lshdb_pebble_write_stalls_total", "Times Pebble held every write back (memtables waiting for flushes, or too many level 0 sublevels).", func(m *db.Metrics) float64 { return float64(m.WriteStalls) }),
		counter("lshdb_pebble_write_stall_seconds_total", "Time writes were held back, the stall in progress included.", func(m *db.Metrics) float64 { return m.WriteStallTime.Seconds() }),
		gauge("lshdb_query_cache_bytes", "Bytes the query cache holds (counted against its budget).", func(m *db.Metrics) float64 { return float64(m.QueryCache.Bytes) }),
		gauge("lshdb_query_cache_docs", "Document entries in the query cache.", func(m *db.Metrics) float64 { return float64(m.QueryCache.Docs) }),
		gauge("lshdb_query_cache_lists", "Posting list entries in the query cache.", func(m *db.Metrics) float64 { return float64(m.QueryCache.Lists) }),
		counter("lshdb_query_cache_doc_hits_total", "Candidates found in the query cache.", func(m *db.Metrics) float64 { return float64(m.QueryCache.DocHits) }),
		counter("lshdb_query_cache_doc_misses_total", "Candidates read from the store.", func(m *db.Metrics) float64 { return float64(m.QueryCache.DocMisses) }),
		counter("lshdb_query_cache_list_hits_total", "Posting lists served from the query cache.", func(m *db.Metrics) float64 { return float64(m.QueryCache.ListHits) }),
		counter("lshdb_query_cache_list_misses_total", "Posting lists not in the query cache.", func(m *db.Metrics) float64 { return float64(m.QueryCache.ListMisses) }),
		gauge("lshdb_damaged", "1 when the index's background work (a compaction, a flush) met damage to its files: run lshdb check (GET /healthz answers 503 meanwhile).", func(m *db.Metrics) float64 { return b2f(m.Damaged) }),
		gauge("lshdb_disk_reserve_bytes", "Free space below which writes are refused as disk_full (--disk-reserve); -1: no check.", func(m *db.Metrics) float64 { return float64(m.DiskReserve) }),
		counter("lshdb_disk_full_refusals_total", "Work refused because the free space fell below the reserve: writes, the temporary files of loads, pairs runs and upgrades, backups, flushes at close.", func(m *db.Metrics) float64 { return float64(m.DiskFullRefusals) }),
		counter("lshdb_expiry_sweeps_total", "Expiry sweeps run.", func(m *db.Metrics) float64 { return float64(m.ExpirySweeps) }),
		counter("lshdb_expiry_sweep_errors_total", "Expiry sweeps that failed (each is logged).", func(m *db.Metrics) float64 { return float64(m.ExpirySweepErrors) }),
		counter("lshdb_expired_swept_total", "Expired documents the sweeps removed.", func(m *db.Metrics) float64 { return float64(m.ExpiredSwept) }),
		gauge("lshdb_expiry_overdue_seconds", "How long the oldest expired document has awaited the sweep (0: none): expired documents are never returned, but count in lshdb_documents and take space until swept.", func(m *db.Metrics) float64 { return m.ExpiryOverdue.Seconds() }),
		counter("lshdb_list_purges_total", "Purges of the posting lists that deletes and upserts emptied (serve's every --purge-every, and POST /v1/purge).", func(m *db.Metrics) float64 { return float64(m.ListPurges) }),
		counter("lshdb_list_purge_errors_total", "Purges of emptied posting lists that failed (the background's are logged).", func(m *db.Metrics) float64 { return float64(m.ListPurgeErrors) }),
		counter("lshdb_lists_purged_total", "Emptied posting lists the purges deleted.", func(m *db.Metrics) float64 { return float64(m.ListsPurged) }),
		counter("lshdb_list_purges_skipped_total", "Background purges skipped: no document was removed since the last purge.", func(m *db.Metrics) float64 { return float64(m.ListPurgesSkipped) }),
		gauge("lshdb_writers_waiting", "Writes waiting now for another to finish (writes run one at a time; a load holds the others back while its documents come).", func(m *db.Metrics) float64 { return float64(m.WritersWaiting) }),
		counter("lshdb_writer_waits_total", "Writes that waited for another to finish.", func(m *db.Metrics) float64 { return float64(m.WriterWaits) }),
		counter("lshdb_writer_wait_seconds_total", "Time writes waited for another to finish, the waits in progress not included.", func(m *db.Metrics) float64 { return m.WriterWaitTime.Seconds() }),
		counter("lshdb_query_cache_list_stale_total", "Cached posting lists not served: changed by a write since they were read, or read at a later version than the query's.", func(m *db.Metrics) float64 { return float64(m.QueryCache.ListStale) }),
	}
	diskFree   = prometheus.NewDesc("lshdb_disk_free_bytes", "Free space of the index's filesystem (writes are refused below lshdb_disk_reserve_bytes).", nil, nil)
	levelFiles = prometheus.NewDesc("lshdb_pebble_level_files", "Tables by level.", []string{"level"}, nil)
	levelBytes = prometheus.NewDesc("lshdb_pebble_level_bytes", "Table bytes by level.", []string{"level"}, nil)
)

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d.d
	}
	ch <- diskFree
	ch <- levelFiles
	ch <- levelBytes
}

// Collect reports nothing once the index is closed (a scrape during
// shutdown).
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	m, err := c.d.Metrics()
	if err != nil {
		return
	}
	for _, d := range descs {
		ch <- prometheus.MustNewConstMetric(d.d, d.kind, d.value(&m))
	}
	if m.DiskFree >= 0 {
		ch <- prometheus.MustNewConstMetric(diskFree, prometheus.GaugeValue, float64(m.DiskFree))
	}
	for i, l := range m.Levels {
		ch <- prometheus.MustNewConstMetric(levelFiles, prometheus.GaugeValue, float64(l.Files), strconv.Itoa(i))
		ch <- prometheus.MustNewConstMetric(levelBytes, prometheus.GaugeValue, float64(l.Bytes), strconv.Itoa(i))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
