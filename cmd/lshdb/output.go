package main

// The command's output contract: the JSON shapes (one typed struct per
// kind of line, every key snake_case) and the escaping of text output.
//
// NB: scripts parse these shapes, so they are structs with json tags, not
// maps: a field's name is fixed here, in one place, and a test checks that
// every command's keys are snake_case.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
)

// esc returns s as it may be shown on a terminal: unchanged when it holds
// only printable characters, else quoted and escaped like a Go string
// literal ("a\x1b]0;title\a", "two\r\nlines"), so that no id or stored
// text can move the cursor, retitle or clear the terminal, set the
// clipboard (OSC 52) or forge an output line. A string starting with a
// double quote is quoted too, so that a quoted form is never ambiguous.
func esc(s string) string {
	if !needsQuote(s) {
		return s
	}
	return strconv.Quote(s)
}

// counted returns n and its noun, singular for one: "1 match", "2
// matches".
func counted[N ~int | ~int64 | ~uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// needsQuote reports whether s holds invalid UTF-8, a control character
// (C0 with tab, CR and LF, DEL, C1), any other non-printing rune (format
// characters such as bidirectional overrides), starts with a quote, or
// is empty, "-" (what a table shows for none) or starts or ends with a
// space.
func needsQuote(s string) bool { return quoteNeeded(s, false) }

// escText is esc for a stored text, which shows as they are the spaces
// that strconv.IsPrint refuses (category Zs: no-break spaces, the
// ideographic space) and the zero-width joiner and non-joiner, which
// Persian spelling and emoji sequences need: a text of Japanese, French
// or Persian was shown escaped whole, "東京都\u3000渋谷区" (a multilingual
// user's U5). Ids keep esc's rules, where a no-break space would pass for
// the gap between two columns.
func escText(s string) string {
	if !quoteNeeded(s, true) {
		return s
	}
	return strconv.Quote(s)
}

// quoteNeeded is needsQuote, and with text escText's.
func quoteNeeded(s string, text bool) bool {
	if s == "" || s == "-" || s[0] == '"' || s[0] == ' ' || s[len(s)-1] == ' ' {
		// NB: a space at either end is invisible in a table's column.
		return true
	}
	if text {
		// NB: so is a no-break or ideographic space, which a text may
		// hold as it is (a read-through's R17).
		first, _ := utf8.DecodeRuneInString(s)
		last, _ := utf8.DecodeLastRuneInString(s)
		if unicode.Is(unicode.Zs, first) || unicode.Is(unicode.Zs, last) {
			return true
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f { // printable ASCII: the common case
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return true // C0 or DEL
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !strconv.IsPrint(r) && !(text && (r == '\u200c' || r == '\u200d' || unicode.Is(unicode.Zs, r))) {
			return true
		}
		i += n
	}
	return false
}

// escControls returns s with each character that needsQuote refuses
// written as a Go escape (\x1b, \r, \u202e, \xff for a byte of invalid
// UTF-8) and the rest unchanged, unquoted: for message lines, whose file
// names (a directory input's, from an archive) and positions come from
// outside.
func escControls(s string) string {
	var b strings.Builder
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		bad := r < 0x20 || r == 0x7f
		if r >= utf8.RuneSelf {
			bad = r == utf8.RuneError && n == 1 || !strconv.IsPrint(r)
		}
		if bad {
			b.WriteString(s[start:i])
			if r == utf8.RuneError && n == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
			} else {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
			}
			start = i + n
		}
		i += n
	}
	if start == 0 {
		return s
	}
	b.WriteString(s[start:])
	return b.String()
}

// escAll escapes each string of ids.
// idLine writes ids on one line, separated by spaces: each as esc
// writes it, and quoted when it holds a space or a quote, so that the
// reader sees where each ends (kjv's "Exodus 6:10 Exodus 13:1" read as four
// words).
func idLine(ids []string) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(idWord(id, " \"'")) // NB: the shell takes ' for a quote too
	}
	return b.String()
}

// idWord is id as esc writes it, quoted when it is empty or holds one of
// the bytes of seps (esc's escapes are quoted already).
func idWord(id, seps string) string {
	if e := esc(id); e != id || (id != "" && !strings.ContainsAny(id, seps)) {
		return e
	}
	return strconv.Quote(id)
}

// tableID is an id as a table's column shows it: as idLine writes it
// (quoted when it holds a blank or a quote), so that what a table shows
// may be pasted into the shell, and a blank inside an id does not read as
// the gap between two columns. NB: pairs, query, dedup and explain wrote
// sing'le and "sp ace" bare, which buckets and clusters quoted.
func tableID(id string) string { return idWord(id, " \"'") }

func escAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = esc(id)
	}
	return out
}

// emitJSON writes v as one JSON line. Characters that encoding/json
// leaves raw and a table escapes (DEL, the C1 range U+0080–U+009F, and
// other non-printing runes such as bidirectional overrides) are written
// as \u escapes too, so a JSON line is as safe on a terminal as a table.
func (a *app) emitJSON(v any) error { return writeJSONLine(a.stdout, v) }

// marshalJSON is json.Marshal without its HTML escaping: a text or id
// with <, > or & reads as written (json.Marshal gives \u003c, \u003e and
// \u0026, meant for JSON inside HTML, which the command never writes).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// escapeJSONControls rewrites DEL and every other character a table
// quotes (C1, and non-printing runes such as bidirectional overrides) in
// encoded JSON as \u escapes (they can only occur inside strings, where
// the escape means the same character; past U+FFFF, as a surrogate
// pair).
//
// NB: DEL and C1 alone were: an id with U+202E (right-to-left override)
// was written raw, and reversed the rest of the line on a terminal, where
// a table showed it escaped.
func escapeJSONControls(b []byte) []byte {
	// NB: out is nil until the first character to escape: a line of
	// printable text in any script is returned as it is, not copied.
	var out []byte
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x7f {
			i++
			continue
		}
		r, n := rune(c), 1
		if c > 0x7f {
			if r, n = utf8.DecodeRune(b[i:]); r == utf8.RuneError && n == 1 || strconv.IsPrint(r) {
				i += n
				continue
			}
		}
		out = append(out, b[start:i]...)
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
		start = i
	}
	if out == nil {
		return b
	}
	return append(out, b[start:]...)
}

// bucketHex is how a bucket is shown, in text and JSON alike: 8 hex
// digits (a bucket is 32 bits since index format 2), which bucket takes
// back.
func bucketHex(b uint64) string { return fmt.Sprintf("%08x", b) }

// recallNote is the expected recall at threshold t when t is below the
// index's own (where the banding was not chosen for it), else nil: of an
// estimate-only answer (storage none, or query --estimate-only), whose
// estimate must reach t too, when estimateOnly.
func recallNote(d index, t float64, estimateOnly bool) *float64 {
	p := d.Params()
	if t == 0 || t >= p.Threshold {
		return nil
	}
	r := p.RecallAt(t, estimateOnly)
	return &r
}

// warnRecall says on stderr what recallNote found.
func (a *app) warnRecall(d index, t float64, r *float64, estimateOnly bool) {
	none := d.Params().Storage == db.StorageNone
	if none {
		fmt.Fprintln(a.stderr, "lshdb: note: the index stores signatures only (storage none): every similarity is the signatures' estimate, not verified")
	}
	if r == nil {
		return
	}
	how := "expected recall there"
	if none || estimateOnly {
		// NB: it gave P(candidate) alone, 1.5-1.85x the share found (a
		// statistician's review, Q1).
		how = "expected recall there: a candidate whose estimate reaches it"
	}
	fmt.Fprintf(a.stderr, "lshdb: note: threshold %v is below the index's %v: a pair at Jaccard %v is found with probability %.4f (%s; more similar pairs are likelier)\n",
		t, d.Params().Threshold, t, *r, how)
}

// appendPairJSON appends p as writeJSONLine writes it, and reports whether
// it could: ids of printable ASCII without quotes or backslashes, and a
// similarity of 0 or from 1e-6 on, whose JSON encoding/json gives as
// strconv's shortest 'f' form. Any other pair goes through marshalJSON.
//
// NB: encoding/json took about 1 µs a pair (reflection and an encoder
// each); pairs writes millions.
func appendPairJSON(dst []byte, p *pairJSON) ([]byte, bool) {
	plain := func(s string) bool {
		for i := range len(s) {
			if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	j := func(f similarity) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
	if !plain(p.A) || !plain(p.B) || !j(p.Jaccard) || p.ExpectedRecall != nil && !j(*p.ExpectedRecall) || p.Estimate != nil && !j(*p.Estimate) {
		return dst, false
	}
	dst = append(dst, `{"a":"`...)
	dst = append(dst, p.A...)
	dst = append(dst, `","b":"`...)
	dst = append(dst, p.B...)
	dst = append(dst, `","jaccard":`...)
	dst = appendSimilarity(dst, float64(p.Jaccard))
	if p.Estimate != nil {
		dst = append(dst, `,"estimate":`...)
		dst = appendSimilarity(dst, float64(*p.Estimate))
	}
	if p.EstimateOnly {
		dst = append(dst, `,"estimate_only":true`...)
	}
	if p.ExpectedRecall != nil {
		dst = append(dst, `,"expected_recall":`...)
		dst = appendSimilarity(dst, float64(*p.ExpectedRecall))
	}
	return append(dst, "}\n"...), true
}

// similarity is a similarity in a line of JSON output (a Jaccard, an
// estimate, an expected recall), written with a decimal point always, as
// the API writes its own (httpapi.Similarity).
type similarity = httpapi.Similarity

// appendSimilarity appends a similarity as a number with a decimal point
// (httpapi.AppendSimilarity), in JSON, CSV and TSV.
func appendSimilarity(dst []byte, f float64) []byte { return httpapi.AppendSimilarity(dst, f) }

// similarityOf is p as a similarity, nil for nil (httpapi.SimilarityOf).
var similarityOf = httpapi.SimilarityOf

// pairJSON is one line of pairs --output json.
type pairJSON struct {
	A       string     `json:"a"`
	B       string     `json:"b"`
	Jaccard similarity `json:"jaccard"`
	// EstimateOnly says Jaccard is the signatures' estimate, not verified
	// (an index of storage none), as explain's estimate_only does. NB: the
	// estimate stays in jaccard, so that clusters --from and report read
	// the pairs file as any other; and it is in estimate too (Estimate),
	// the field query and explain give it in, with jaccard null (an
	// analyst's review of the shell, SH9).
	Estimate     *similarity `json:"estimate,omitempty"`
	EstimateOnly bool        `json:"estimate_only,omitempty"`
	// ExpectedRecall is set only when the threshold is below the index's.
	ExpectedRecall *similarity `json:"expected_recall,omitempty"`
}

// matchJSON is one line of query --output json. Jaccard is null when the
// match was not verified (--estimate-only).
type matchJSON struct {
	ID             string      `json:"id"`
	Jaccard        *similarity `json:"jaccard"`
	Estimate       similarity  `json:"estimate"`
	Bands          int         `json:"bands"`
	ExpectedRecall *similarity `json:"expected_recall,omitempty"`
	// The stored metadata, as export writes it; none: absent.
	Meta       json.RawMessage `json:"meta,omitempty"`
	MetaString *string         `json:"meta_string,omitempty"`
	MetaBase64 *string         `json:"meta_base64,omitempty"`
	// Text is the stored text (--with-text).
	Text *string `json:"text,omitempty"`
}

// bucketJSON is one posting list, as the API writes it.
type bucketJSON = httpapi.BucketJSON

// nonNil returns s, or an empty slice for nil (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// bucketsJSON is hot lists as the API writes them.
func bucketsJSON(hs []db.BucketInfo) []bucketJSON { return httpapi.BucketsOut(hs) }

// bucketStatsJSON is the output of buckets --output json: one object,
// histogram included.
type bucketStatsJSON struct {
	Band *int `json:"band,omitempty"` // --band, when given
	// PostingLists is the lists read (of the band --band names, or of
	// every band), as the table says: a sum of the per-band counts that
	// skips the nulls (Python's sum() failed on them: a newcomer's N2-4).
	PostingLists int          `json:"posting_lists"`
	Lists        []*int       `json:"posting_lists_per_band"` // null for a band --band left unread
	Histogram    []int        `json:"bucket_size_histogram"`
	Hottest      []bucketJSON `json:"hottest"`
}

// memberJSON is one line of bucket --output json: a member of the
// bucket, which the line names as buckets does, so that lines of several
// buckets can be joined.
type memberJSON struct {
	Band   int    `json:"band"`
	Bucket string `json:"bucket"`
	ID     string `json:"id"`
	// With --jaccard: the member's Jaccard to the first member, exact,
	// or its estimate from the signatures on an index of storage none.
	Jaccard  *similarity `json:"jaccard,omitempty"`
	Estimate *similarity `json:"estimate,omitempty"`
	// With --with-text: the stored text (absent where none is stored).
	Text *string `json:"text,omitempty"`
}

// expiryBytes is the expiry index's part of stats' bytes by record kind:
// "expiry index N, ", or nothing for an index with no TTL (it was counted
// in no kind: an inspection review's N7).
func expiryBytes(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("expiry index %d, ", n)
}

// tablesLine is stats' line of the tables' bytes on disk by the kind of
// their first key. A kind that begins no table is named apart: "ids 0,
// postings 0" read as an index that stored no postings, where they were
// in the tables that docs begin (a newcomer's review, W5).
func tablesLine(tb map[string]uint64) string {
	return "tables on disk (compressed), each counted by the kind of its first key (a table may hold several kinds): " +
		tablesByKind(tb, func(n uint64) string { return strconv.FormatUint(n, 10) })
}

// tablesByKind is tablesLine's figures, each written by num (report's
// page writes them in KiB, MiB, GiB).
func tablesByKind(tb map[string]uint64, num func(uint64) string) string {
	var counted, within []string
	for _, k := range []struct{ key, name string }{{"docs", "docs"}, {"ids", "ids"}, {"postings", "postings"}, {"expiry", "expiry index"}, {"manifest+counters", "manifest and counters"}} {
		switch n := tb[k.key]; {
		case n > 0:
			counted = append(counted, k.name+" "+num(n))
		case k.key != "expiry":
			within = append(within, k.name)
		}
	}
	switch {
	case len(counted) == 0:
		return "none yet (the writes are in the write-ahead log)"
	case len(within) > 0:
		return strings.Join(counted, ", ") + "; " + strings.Join(within, ", ") + " begin no table (they are in these)"
	}
	return strings.Join(counted, ", ")
}

// storedBytesJSON is stats' stored bytes by record kind.
type storedBytesJSON struct {
	Docs             uint64 `json:"docs"`
	IDs              uint64 `json:"ids"`
	Postings         uint64 `json:"postings"`
	Expiry           uint64 `json:"expiry"` // the expiry index: a key per document with a TTL
	ManifestCounters uint64 `json:"manifest_and_counters"`
}

// statsJSON is the output of stats --output json.
type statsJSON struct {
	Docs                uint64          `json:"docs"`
	Threshold           float64         `json:"threshold"`
	Bands               int             `json:"bands"`
	Rows                int             `json:"rows"`
	NumPerm             int             `json:"num_perm"`
	Scheme              string          `json:"scheme"`
	Seed                uint64          `json:"seed"`
	Shingle             string          `json:"shingle"`
	ShingleSize         int             `json:"shingle_size"`
	Bag                 bool            `json:"bag"`
	Normalization       string          `json:"normalization"`
	StopWords           []string        `json:"stop_words"`
	StoreText           bool            `json:"store_text"`
	Storage             string          `json:"storage"`
	FormatVersion       int             `json:"format_version"`
	ExpectedRecall      float64         `json:"expected_recall"`
	ExpectedRecallShort *float64        `json:"expected_recall_short_docs,omitempty"`
	PostingListsPerBand []int           `json:"posting_lists_per_band"`
	BucketSizeHistogram []int           `json:"bucket_size_histogram"`
	StoredBytes         storedBytesJSON `json:"stored_bytes"`
	DiskBytes           uint64          `json:"disk_bytes"`
	TableBytes          storedBytesJSON `json:"table_bytes"`        // on disk, by the kind of each table's first key
	LogBytes            uint64          `json:"log_bytes"`          // the write-ahead log's files: the live log (writes not yet in tables, and space allocated ahead), and logs kept for reuse
	RecycledLogBytes    uint64          `json:"recycled_log_bytes"` // of log_bytes, the logs kept for reuse
	Hottest             []bucketJSON    `json:"hottest"`
	Expired             int             `json:"expired,omitempty"`  // TTL passed, awaiting the sweep
	Expiring            int             `json:"expiring,omitempty"` // set to expire later
	// Instance names the index, as info's does (it was info's alone: an
	// inspection review's Q4).
	Instance              string `json:"instance,omitempty"`
	*httpapi.EstimateJSON        // storage none only
}

// paramsJSON is the output of create --output json: the parameters, as
// stats names them.
type paramsJSON struct {
	Threshold     float64  `json:"threshold"`
	Bands         int      `json:"bands"`
	Rows          int      `json:"rows"`
	NumPerm       int      `json:"num_perm"`
	Scheme        string   `json:"scheme"`
	Shingle       string   `json:"shingle"`
	ShingleSize   int      `json:"shingle_size"`
	Bag           bool     `json:"bag"`
	Normalization string   `json:"normalization"`
	StopWords     []string `json:"stop_words"`
	StoreText     bool     `json:"store_text"`
	Storage       string   `json:"storage"`
	Seed          uint64   `json:"seed"`
	// ExpectedRecall is P(candidate) at the threshold, as in stats (it
	// was recall_at_threshold here before: C24).
	ExpectedRecall float64 `json:"expected_recall"`
	// ExpectedRecallShortDocs is P(candidate) at the threshold measured
	// for documents of 8 to 100 shingles (db.MeasureRecall); absent when
	// not measured (signatures over db.MaxMeasuredNumPerm values).
	ExpectedRecallShortDocs *float64 `json:"expected_recall_short_docs,omitempty"`
	*httpapi.EstimateJSON            // storage none only
}

// explainJSON is the output of explain --output json.
type explainJSON struct {
	A string `json:"a"`
	B string `json:"b"`
	// Jaccard is null on an index that keeps no sets (storage none), as
	// query's is: only the estimate is known.
	Jaccard        *similarity `json:"jaccard"`
	Estimate       similarity  `json:"estimate"`
	EstimateOnly   bool        `json:"estimate_only,omitempty"`
	Threshold      float64     `json:"threshold"`
	Bands          int         `json:"bands"`
	CollidingBands []int       `json:"colliding_bands"`
	// CollidingBuckets are the buckets of CollidingBands, one each, in
	// the form bucket takes.
	CollidingBuckets []string `json:"colliding_buckets"`
	// UnlistedBands are colliding bands whose list does not name both
	// (damage: lshdb check).
	UnlistedBands []int   `json:"unlisted_bands,omitempty"`
	PCandidate    float64 `json:"p_candidate"`
	SizesRuleOut  bool    `json:"sizes_rule_out,omitempty"`
	Found         bool    `json:"found"`
}

// checkJSON is the output of check --output json.
type checkJSON struct {
	Docs         int      `json:"docs"`
	IDs          int      `json:"ids"`
	PostingLists int      `json:"posting_lists"`
	EmptyLists   int      `json:"empty_lists"`
	Postings     int      `json:"postings"`
	Problems     []string `json:"problems"` // [] when clean, never null; the first 100
	ProblemCount int      `json:"problem_count"`
	OK           bool     `json:"ok"`
	Expired      int      `json:"expired,omitempty"` // past their expiry, awaiting the sweep
	// Stopped: damage stopped the check (its problem), so the counts
	// above are of nothing, not of an empty index.
	Stopped bool `json:"stopped,omitempty"`
}

// tuneJSON is the output of tune --output json.
type tuneJSON struct {
	Bands           int     `json:"bands"`
	Rows            int     `json:"rows"`
	Threshold       float64 `json:"threshold"`
	SCurveThreshold float64 `json:"s_curve_threshold"`
	PAtThreshold    float64 `json:"p_at_threshold"`
	// PAtThresholdShortDocs is P(threshold) measured for documents of 8
	// to 100 shingles with Scheme (db.MeasureRecall).
	PAtThresholdShortDocs *float64      `json:"p_at_threshold_short_docs,omitempty"`
	Scheme                string        `json:"scheme"`
	FalsePositiveArea     float64       `json:"false_positive_area"`
	FalseNegativeArea     float64       `json:"false_negative_area"`
	Table                 []bands.Point `json:"table"`
}

// versionJSON is the output of version --output json.
type versionJSON struct {
	Version       string `json:"version"`
	FormatVersion int    `json:"format_version"`
	GoVersion     string `json:"go_version"`
	Inflater      string `json:"bgzf_inflater"` // inflate.Name: libdeflate (cgo) or klauspost's
}

// pairsStatsJSON is db.PairsStats as bench --build reports it.
type pairsStatsJSON struct {
	Docs            int   `json:"docs"`
	IdenticalGroups int   `json:"identical_groups"`
	IdenticalPairs  int64 `json:"identical_pairs"`
	Lists           int   `json:"lists"`
	HotLists        int   `json:"hot_lists"`
	LargestList     int   `json:"largest_list"`
	Candidates      int64 `json:"candidates"`
	Filtered        int64 `json:"filtered"`
	Verified        int64 `json:"verified"`
	Matched         int64 `json:"matched"`
	Reported        int64 `json:"reported"`
	Spilled         bool  `json:"spilled"`
}

func pairsStatsOut(s db.PairsStats) pairsStatsJSON {
	return pairsStatsJSON{Docs: s.Docs, IdenticalGroups: s.IdenticalGroups, IdenticalPairs: s.IdenticalPairs,
		Lists: s.Lists, HotLists: s.HotLists, LargestList: s.LargestList, Candidates: s.Candidates,
		Filtered: s.Filtered, Verified: s.Verified, Matched: s.Matched, Reported: s.Reported, Spilled: s.Spilled}
}

// shortDocs returns a recall estimate's short-document figure for JSON:
// nil when it was not measured.
func shortDocs(r db.RecallEstimate) *float64 {
	if !r.Measured {
		return nil
	}
	return &r.ShortDocs
}

// storageNote says what the index keeps per document, for the parameters
// line: "storage text", "storage sets (+ text)", "storage none: estimates
// only".
func storageNote(p db.Params) string {
	s := "storage " + p.Storage
	if p.Storage != db.StorageText && p.StoreText {
		s += " (+ text)"
	}
	if p.Storage == db.StorageNone {
		s += ": estimates only"
	}
	return s
}

// writtenCompressions are the file name endings of the compressions lshdb
// writes (nameWriter), each with its format's name: gzip (as BGZF) and
// zstd.
var writtenCompressions = [][2]string{
	{".gz", "gzip"}, {".gzip", "gzip"}, {".bgz", "gzip"}, {".zst", "zstd"}, {".zstd", "zstd"},
}

// nameCompression returns the ending of path that names a compression
// lshdb writes (writtenCompressions), and that compression ("gzip" or
// "zstd"), or "", "" for a name that names none.
func nameCompression(path string) (suffix, compression string) {
	n := strings.ToLower(path)
	for _, z := range writtenCompressions {
		if strings.HasSuffix(n, z[0]) {
			return z[0], z[1]
		}
	}
	return "", ""
}

// unwritableCompressions are the file name endings of compressions that
// lshdb neither writes nor reads (docio refuses such an input by its
// magic number), each with its format's name.
var unwritableCompressions = [][2]string{
	{".xz", "xz"}, {".txz", "xz"}, {".lzma", "lzma"}, {".bz2", "bzip2"}, {".tbz2", "bzip2"},
	{".lz4", "lz4"}, {".zip", "zip"}, {".7z", "7z"}, {".br", "brotli"},
}

// compressionNameFits refuses an output file name (of flag) that says a
// compression lshdb does not write: such a file was written as plain JSON
// Lines under a name that every other tool reads as compressed.
func compressionNameFits(flag, path string) error {
	n := strings.ToLower(path)
	for _, z := range unwritableCompressions {
		if strings.HasSuffix(n, z[0]) {
			return usagef("%s %s names %s compression, which lshdb does not write: name the file .gz (gzip) or .zst (zstd), or without a compression, and compress it afterwards", flag, escControls(path), z[1])
		}
	}
	return nil
}

// score formats a similarity with 4 decimals, or as many more as it takes
// to tell it from the threshold t it is read beside.
//
// NB: a Jaccard of 0.79998 was printed 0.8000 beside "threshold 0.8",
// and then said to be below it.
func score(j, t float64) string {
	for prec := 4; prec <= 17; prec++ {
		s := strconv.FormatFloat(j, 'f', prec, 64)
		if v, err := strconv.ParseFloat(s, 64); err == nil && (v < t) == (j < t) {
			return s
		}
	}
	return strconv.FormatFloat(j, 'f', -1, 64)
}
