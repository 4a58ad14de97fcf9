package httpapi

// The API's JSON shapes. Every key is snake_case and named as in the
// command's --output json (cmd/lshdb/output.go); what the command leaves
// out but a *db.DB method returns is added, so that a client rebuilds the
// method's exact result (package db/client does). Each shape comes with
// its conversion from and back to db's type, so that both directions live
// in one place and a test proves the round trip.
//
// NB: bucket ids and shingle hashes are hex strings, not JSON numbers: a
// uint64 above 2^53 loses precision in JavaScript, jq and pandas (C8).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/minhash"
)

// DocJSON is a document to store (put, put-if-new): a text, or the
// caller's tokens or token hashes (PutSet), or a signature (PutSignature),
// one of them. Meta is the metadata as a UTF-8 string; MetaBase64 carries
// metadata that is not UTF-8.
type DocJSON struct {
	ID         string   `json:"id"`
	Text       string   `json:"text"`
	Tokens     []string `json:"tokens,omitempty"`
	Hashes     []Hash64 `json:"hashes,omitempty"`
	Signature  []uint32 `json:"signature,omitempty"`
	Meta       *string  `json:"meta,omitempty"`
	MetaBase64 *string  `json:"meta_base64,omitempty"`
}

// docLine is a DocJSON read from a line of a stream (put-if-new, load):
// its field names are matched exactly, other fields are ignored (a
// corpus's url or title, as lshdb build ignores them), and a field of the
// document given twice is refused.
//
// NB: encoding/json matches names without regard to case and keeps the
// last of two: a corpus line whose metadata had an "ID" column was stored
// under that id, and "TEXT" replaced the text, where lshdb build, reading
// the same file, took "id" and "text" (an SRE review's H2).
type docLine DocJSON

func (d *docLine) UnmarshalJSON(raw []byte) error {
	// NB: most lines name each field once, in its case: encoding/json
	// reads them (a token at a time, every line took 2.2-3.7 times as
	// long: a maintainer review's K1).
	if plainLine(raw) {
		*d = docLine{}
		return json.Unmarshal(raw, (*DocJSON)(d))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return &json.UnmarshalTypeError{Value: tokenKind(t), Type: reflect.TypeFor[DocJSON]()}
	}
	*d = docLine{}
	dsts := [len(docFields)]any{&d.ID, &d.Text, &d.Tokens, &d.Hashes, &d.Signature, &d.Meta, &d.MetaBase64}
	var seen [len(docFields)]bool
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		i := slices.Index(docFields[:], key)
		if i < 0 {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		if seen[i] {
			return &errKeys{key, key}
		}
		seen[i] = true
		if err := dec.Decode(dsts[i]); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "" {
				// NB: as encoding/json names a struct's field
				te.Struct, te.Field = "DocJSON", key
			}
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return err
}

// docFields are DocJSON's field names, in the order of docLine's
// pointers to them.
var docFields = [7]string{"id", "text", "tokens", "hashes", "signature", "meta", "meta_base64"}

// tokenKind names the JSON kind of a token, as encoding/json's errors do.
func tokenKind(t json.Token) string {
	switch t.(type) {
	case json.Delim:
		return "array"
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

// Hash64 is a 64-bit token hash: a JSON number, or a string of one
// (decimal, or hex with 0x) for clients whose numbers are doubles.
type Hash64 uint64

// UnmarshalJSON reads a number or a string of one.
func (h *Hash64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	// NB: not base 0, which reads "0123" as octal and takes 0b, 0o and
	// underscores: decimal, or hex after 0x, as documented.
	base := 10
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, base = s[2:], 16
	}
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return fmt.Errorf("a hash is a 64-bit unsigned integer (a number, or a string of one): %s", b)
	}
	*h = Hash64(v)
	return nil
}

// DocIn converts d for the wire.
func DocIn(d db.Doc) DocJSON {
	out := DocJSON{ID: d.ID, Text: d.Text, Tokens: d.Set.TokenList(), Hashes: hashesIn(d.Set.HashList()), Signature: d.Signature}
	out.Meta, out.MetaBase64 = metaOut(d.Meta)
	return out
}

func hashesIn(hs []uint64) []Hash64 {
	if hs == nil {
		return nil
	}
	out := make([]Hash64, len(hs))
	for i, h := range hs {
		out[i] = Hash64(h)
	}
	return out
}

// givenSet returns the set of tokens or hashes given (zero for none), or
// a bad request when more than one of text, tokens, hashes and signature
// is.
func givenSet(text string, tokens []string, hashes []Hash64, sig []uint32) (db.Set, error) {
	n := 0
	for _, given := range []bool{text != "", tokens != nil, hashes != nil, sig != nil} {
		if given {
			n++
		}
	}
	if n > 1 {
		return db.Set{}, fmt.Errorf("%w: a document gives %d of text, tokens, hashes and signature (one at most)", db.ErrInvalidDoc, n)
	}
	switch {
	case tokens != nil:
		return db.Tokens(tokens...), nil
	case hashes != nil:
		hs := make([]uint64, len(hashes))
		for i, h := range hashes {
			hs[i] = uint64(h)
		}
		return db.Hashes(hs...), nil
	}
	return db.Set{}, nil
}

// Doc converts d back.
func (d DocJSON) Doc() (db.Doc, error) {
	set, err := givenSet(d.Text, d.Tokens, d.Hashes, d.Signature)
	if err != nil {
		return db.Doc{}, err
	}
	meta, err := metaIn(d.Meta, d.MetaBase64)
	return db.Doc{ID: d.ID, Text: d.Text, Set: set, Signature: d.Signature, Meta: meta}, err
}

func metaOut(m []byte) (*string, *string) {
	switch {
	case m == nil:
		return nil, nil
	case utf8.Valid(m):
		s := string(m)
		return &s, nil
	default:
		s := base64.StdEncoding.EncodeToString(m)
		return nil, &s
	}
}

func metaIn(s, b64 *string) ([]byte, error) {
	switch {
	case s != nil && b64 != nil:
		return nil, badRequest("give meta or meta_base64, not both")
	case s != nil:
		return []byte(*s), nil
	case b64 != nil:
		m, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, badRequest("meta_base64: %v", err)
		}
		if m == nil {
			m = []byte{}
		}
		return m, nil
	}
	return nil, nil
}

// PutRequest is the body of POST /v1/docs: one document (id, text, meta)
// or a batch (docs), stored atomically.
type PutRequest struct {
	DocJSON
	Docs      []DocJSON `json:"docs,omitempty"`
	NoSync    bool      `json:"no_sync,omitempty"`
	StoreText bool      `json:"store_text,omitempty"`
	SkipEmpty bool      `json:"skip_empty,omitempty"`
	// TTLMillis and ExpireAt (RFC 3339) are db.WriteOptions.TTL and
	// ExpireAt.
	TTLMillis int64  `json:"ttl_ms,omitempty"`
	ExpireAt  string `json:"expire_at,omitempty"`
}

// Expiry returns the TTL and expiry time that ttl_ms and expire_at give,
// or ErrBadRequest.
func Expiry(ttlMillis int64, expireAt string) (time.Duration, time.Time, error) {
	var at time.Time
	if expireAt != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, expireAt); err != nil {
			return 0, at, fmt.Errorf("%w: expire_at %q is not an RFC 3339 time", ErrBadRequest, expireAt)
		}
		if at.IsZero() {
			// NB: the zero time means "no expiry" to db.WriteOptions: as
			// any time past, it is the earliest expiry.
			at = time.Unix(0, 1)
		}
	}
	// NB: in nanoseconds a TTL fills an int64 at 292 years: one longer
	// would wrap around to a short or negative one, and a negative one
	// past that to a positive one (the write then went through and
	// expired the document it replaced). A negative TTL is refused, as
	// the database refuses it in process.
	if ttlMillis > math.MaxInt64/int64(time.Millisecond) {
		return 0, at, fmt.Errorf("%w: ttl_ms %d is more than %d", db.ErrInvalidOptions, ttlMillis, math.MaxInt64/int64(time.Millisecond))
	}
	if ttlMillis < 0 {
		return 0, at, fmt.Errorf("%w: ttl_ms %d is negative", db.ErrInvalidOptions, ttlMillis)
	}
	// NB: refused here, before a stream's answer starts: put-if-new
	// answered 200 and a lone error line, from the database's own check
	// (an API client's review, A-1).
	if ttlMillis > 0 && expireAt != "" {
		return 0, at, fmt.Errorf("%w: ttl_ms and expire_at are both given (one at most)", db.ErrInvalidOptions)
	}
	return time.Duration(ttlMillis) * time.Millisecond, at, nil
}

// ExpiryOut returns ttl_ms and expire_at for wo's TTL and ExpireAt, or
// db.ErrInvalidOptions for an ExpireAt that RFC 3339 cannot write (after
// year 9999: the server read it as no time, a bad request, where the
// database refuses any expiry after 2262 as an invalid option: a TTL
// review's TTL-1). NB: a TTL is sent in whole milliseconds, rounded up,
// so that it never ends sooner than asked (1.9 ms ended at 1 ms: TTL-2).
func ExpiryOut(wo *db.WriteOptions) (ttlMillis int64, expireAt string, err error) {
	if wo == nil {
		return 0, "", nil
	}
	if wo.TTL != 0 {
		ttlMillis = wo.TTL.Milliseconds()
		if wo.TTL%time.Millisecond > 0 {
			ttlMillis++
		}
		if ttlMillis == 0 {
			ttlMillis = -1 // NB: a negative TTL, refused by the server as in process
		}
	}
	if !wo.ExpireAt.IsZero() {
		if wo.ExpireAt.Year() > 9999 {
			return 0, "", fmt.Errorf("%w: ExpireAt %v is after %v, the latest expiry an index can store", db.ErrInvalidOptions, wo.ExpireAt, time.Unix(0, math.MaxInt64).UTC())
		}
		at := wo.ExpireAt
		if !at.After(time.Unix(0, 0)) {
			// NB: a time past, before 1970 too, is the earliest expiry
			// to the database; before year 0, RFC 3339 cannot write it,
			// and the server refused it as a bad request (a read-through's
			// RT8-3).
			at = time.Unix(0, 1).UTC()
		}
		expireAt = at.Format(time.RFC3339Nano)
	}
	return ttlMillis, expireAt, nil
}

// BatchResultJSON is db.BatchResult.
type BatchResultJSON struct {
	Stored       int      `json:"stored"`
	Replaced     int      `json:"replaced"`
	Repeated     int      `json:"repeated"`
	SkippedEmpty []string `json:"skipped_empty"`
}

// BatchResultOut converts r for the wire.
func BatchResultOut(r db.BatchResult) BatchResultJSON {
	return BatchResultJSON{Stored: r.Stored, Replaced: r.Replaced, Repeated: r.Repeated, SkippedEmpty: nonNil(r.SkippedEmpty)}
}

// BatchResult converts r back.
func (r BatchResultJSON) BatchResult() db.BatchResult {
	return db.BatchResult{Stored: r.Stored, Replaced: r.Replaced, Repeated: r.Repeated, SkippedEmpty: nilIfEmpty(r.SkippedEmpty)}
}

// LoadResultJSON is db.LoadResult, the answer of POST /v1/load.
type LoadResultJSON struct {
	Stored       int      `json:"stored"`
	Replaced     int      `json:"replaced"`
	Repeated     int      `json:"repeated"`
	Deleted      int      `json:"deleted"`
	SkippedEmpty []string `json:"skipped_empty"`
}

// LoadResult converts r back.
func (r LoadResultJSON) LoadResult() db.LoadResult {
	return db.LoadResult{Stored: r.Stored, Replaced: r.Replaced, Repeated: r.Repeated, Deleted: r.Deleted, SkippedEmpty: nilIfEmpty(r.SkippedEmpty)}
}

// Similarity is a similarity on the wire (a Jaccard, an estimate),
// written with a decimal point always: 1.0, not 1 (AppendSimilarity). It
// reads as any JSON number.
type Similarity float64

// MarshalJSON writes s as AppendSimilarity does; NaN and the infinities
// are refused, as encoding/json refuses them in a float64.
func (s Similarity) MarshalJSON() ([]byte, error) {
	f := float64(s)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	return AppendSimilarity(nil, f), nil
}

// SimilarityOf is p as a *Similarity, nil for nil.
func SimilarityOf(p *float64) *Similarity {
	if p == nil {
		return nil
	}
	s := Similarity(*p)
	return &s
}

// AppendSimilarity appends f as a number with a decimal point, or an
// exponent where encoding/json writes one, as it writes it (below 1e-6,
// from 1e21): 1.0, not 1. NaN and the infinities are written as strconv writes them.
//
// NB: identical sets, Jaccard 1, come first in an unsorted pairs output
// (and in a filter's removed records): a reader that infers a column's
// type from its first rows took jaccard for an integer. DuckDB's
// read_json (20,480 rows) then read 0.85 as 1, silently; Polars failed
// ("cannot parse '0.85' (f64) as Int64") (a review at scale, S10-5).
func AppendSimilarity(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		// NB: as encoding/json writes them: 1e-7, not 1e-07.
		dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
		return dst
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	if !bytes.ContainsRune(dst[n:], '.') {
		dst = append(dst, ".0"...)
	}
	return dst
}

// PutIfNewJSON is one line of the put-if-new answer, as lshdb dedup
// --output json prints it: duplicate_of and jaccard are null when the
// document was stored. A refused document's line has only id and error
// (a null duplicate_of would read as "stored").
type PutIfNewJSON struct {
	ID          string      `json:"id"`
	DuplicateOf *string     `json:"duplicate_of"`
	Jaccard     *Similarity `json:"jaccard"`
	Estimate    *Similarity `json:"estimate,omitempty"`
	Bands       *int        `json:"bands,omitempty"`
	// Meta (UTF-8) or MetaBase64 (other bytes): the duplicate's stored
	// metadata, as in MatchJSON.
	Meta       *string `json:"meta,omitempty"`
	MetaBase64 *string `json:"meta_base64,omitempty"`
	// Replaced: the document was stored in place of a stored one with
	// its id (db.IfNewResult.Replaced).
	Replaced bool `json:"replaced,omitempty"`
	// Unchanged: with Replaced, the document replaced had the same
	// content (db.IfNewResult.Unchanged).
	Unchanged bool       `json:"unchanged,omitempty"`
	Error     *ErrorBody `json:"error,omitempty"`
}

// Match is the duplicate the line names, nil for none (the document was
// stored, or refused).
func (p *PutIfNewJSON) Match() *db.Match {
	if p.DuplicateOf == nil {
		return nil
	}
	m := &db.Match{ID: *p.DuplicateOf}
	if p.Jaccard != nil {
		m.Jaccard = float64(*p.Jaccard)
	}
	if p.Estimate != nil {
		m.Estimate = float64(*p.Estimate)
	}
	if p.Bands != nil {
		m.Bands = *p.Bands
	}
	// NB: as MatchJSON.Match, bad base64 from another server leaves Meta
	// nil.
	m.Meta, _ = metaIn(p.Meta, p.MetaBase64)
	return m
}

// MarshalJSON writes a refused document's line without duplicate_of and
// jaccard.
func (p PutIfNewJSON) MarshalJSON() ([]byte, error) {
	type line PutIfNewJSON // NB: without this method
	if p.Error != nil {
		return json.Marshal(struct {
			ID    string     `json:"id"`
			Error *ErrorBody `json:"error"`
		}{p.ID, p.Error})
	}
	return json.Marshal(line(p))
}

// DeleteRequest is the body of POST /v1/docs/delete.
type DeleteRequest struct {
	IDs           []string `json:"ids"`
	IgnoreMissing bool     `json:"ignore_missing,omitempty"`
	NoSync        bool     `json:"no_sync,omitempty"`
}

// HasRequest is the body of POST /v1/docs/has: the ids to look up.
type HasRequest struct {
	IDs []string `json:"ids"`
}

// HasResultJSON answers a HasRequest: Exists[i] answers IDs[i].
type HasResultJSON struct {
	Exists []bool `json:"exists"`
}

// DeleteResultJSON is db.DeleteResult.
type DeleteResultJSON struct {
	Deleted int      `json:"deleted"`
	Missing []string `json:"missing"`
}

// DocumentJSON is a stored document (get): the command's keys (id, num,
// shingles, text, meta) and the shingle set and signature.
type DocumentJSON struct {
	ID  string `json:"id"`
	Num uint64 `json:"num"`
	// Shingles is the set's size (StoredDoc.SetLen): 0 where unknown,
	// a signature put in none mode.
	Shingles   int      `json:"shingles"`
	HasText    bool     `json:"has_text"`
	Text       *string  `json:"text,omitempty"`
	Meta       *string  `json:"meta,omitempty"`
	MetaBase64 *string  `json:"meta_base64,omitempty"`
	ShingleSet []string `json:"shingle_set"` // 16 hex digits each
	Signature  []uint32 `json:"signature"`
	// ExpiresAt is when the document expires (RFC 3339); absent: never.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// DocumentOut converts d for the wire.
func DocumentOut(d *db.StoredDoc) DocumentJSON {
	out := DocumentJSON{ID: d.ID, Num: d.Num, Shingles: d.SetLen, HasText: d.HasText,
		ShingleSet: make([]string, len(d.Shingles)), Signature: nonNil(d.Signature)}
	if d.HasText {
		out.Text = &d.Text
	}
	out.Meta, out.MetaBase64 = metaOut(d.Meta)
	for i, s := range d.Shingles {
		out.ShingleSet[i] = fmt.Sprintf("%016x", s)
	}
	if !d.ExpiresAt.IsZero() {
		out.ExpiresAt = d.ExpiresAt.Format(time.RFC3339Nano)
	}
	return out
}

// Document converts d back.
func (d DocumentJSON) Document() (*db.StoredDoc, error) {
	out := &db.StoredDoc{ID: d.ID, Num: d.Num, HasText: d.HasText, SetLen: d.Shingles, Signature: nilIfEmpty(d.Signature)}
	if d.Text != nil {
		out.Text = *d.Text
	}
	var err error
	if out.Meta, err = metaIn(d.Meta, d.MetaBase64); err != nil {
		return nil, err
	}
	if d.ExpiresAt != "" {
		if out.ExpiresAt, err = time.Parse(time.RFC3339Nano, d.ExpiresAt); err != nil {
			return nil, fmt.Errorf("expires_at: %w", err)
		}
		out.ExpiresAt = out.ExpiresAt.UTC()
	}
	if len(d.ShingleSet) > 0 {
		out.Shingles = make([]uint64, len(d.ShingleSet))
		for i, s := range d.ShingleSet {
			if out.Shingles[i], err = strconv.ParseUint(s, 16, 64); err != nil {
				return nil, fmt.Errorf("shingle_set: %w", err)
			}
		}
	}
	return out, nil
}

// QueryRequest is the body of POST /v1/query: a text, a stored id, the
// caller's tokens or token hashes (QuerySet), or a signature
// (QuerySignature), one of them.
type QueryRequest struct {
	Text         *string  `json:"text,omitempty"`
	ID           *string  `json:"id,omitempty"`
	Tokens       []string `json:"tokens,omitempty"`
	Hashes       []Hash64 `json:"hashes,omitempty"`
	Signature    []uint32 `json:"signature,omitempty"`
	Threshold    float64  `json:"threshold,omitempty"`
	Limit        int      `json:"limit,omitempty"`
	EstimateOnly bool     `json:"estimate_only,omitempty"`
	WithText     bool     `json:"with_text,omitempty"`
}

// Input returns the query the request gives, or a bad request when it
// gives none or more than one.
func (q QueryRequest) Input() (db.QueryInput, error) {
	n := 0
	for _, given := range []bool{q.ID != nil, q.Text != nil, q.Tokens != nil, q.Hashes != nil, q.Signature != nil} {
		if given {
			n++
		}
	}
	switch {
	case n > 1:
		return db.QueryInput{}, fmt.Errorf("%w: a query gives %d of id, text, tokens, hashes and signature (exactly one)", db.ErrInvalidDoc, n)
	case n == 0:
		return db.QueryInput{}, badRequest("give one of id, text, tokens, hashes and signature")
	}
	set, _ := givenSet("", q.Tokens, q.Hashes, nil)
	in := db.QueryInput{Set: set, Signature: q.Signature}
	switch {
	case q.ID != nil:
		if in.ID = *q.ID; in.ID == "" {
			return in, fmt.Errorf("%w: an empty id", db.ErrInvalidID)
		}
	case q.Text != nil:
		in.Text = *q.Text
	}
	return in, nil
}

// QueryRequestOf is in as a request (without the options).
func QueryRequestOf(in db.QueryInput) QueryRequest {
	q := QueryRequest{Tokens: in.Set.TokenList(), Hashes: hashesIn(in.Set.HashList()), Signature: in.Signature}
	if in.ID != "" {
		q.ID = &in.ID
	}
	if in.Text != "" || in.ID == "" && in.Set.IsZero() && in.Signature == nil {
		q.Text = &in.Text // NB: nothing given reads as an empty text, refused as in process
	}
	return q
}

// QueryManyRequest is the body of POST /v1/query/many: queries answered
// on one snapshot, with one set of options.
type QueryManyRequest struct {
	Queries      []QueryRequest `json:"queries"`
	Threshold    float64        `json:"threshold,omitempty"`
	Limit        int            `json:"limit,omitempty"`
	EstimateOnly bool           `json:"estimate_only,omitempty"`
	WithText     bool           `json:"with_text,omitempty"`
}

// QueryManyJSON is the answer of POST /v1/query/many: one result per
// query, in their order.
type QueryManyJSON struct {
	Results []QueryResultJSON `json:"results"`
}

// MatchJSON is one match, as a line of lshdb query --output json: jaccard
// is null when not verified.
type MatchJSON struct {
	ID       string      `json:"id"`
	Jaccard  *Similarity `json:"jaccard"`
	Estimate Similarity  `json:"estimate"`
	Bands    int         `json:"bands"`
	// Meta (UTF-8) or MetaBase64 (other bytes): the stored metadata, as in
	// DocumentJSON; absent for none.
	Meta       *string `json:"meta,omitempty"`
	MetaBase64 *string `json:"meta_base64,omitempty"`
	// Text is the stored text when the query asked with_text.
	Text string `json:"text,omitempty"`
}

// QueryResultJSON is db.QueryResult.
type QueryResultJSON struct {
	Matches []MatchJSON `json:"matches"`
	// Found is the number of matches before the limit (0 from a server
	// that did not say: read as len(matches)).
	Found          int     `json:"found"`
	Threshold      float64 `json:"threshold"`
	ExpectedRecall float64 `json:"expected_recall"`
	Candidates     int     `json:"candidates"`
	EstimateOnly   bool    `json:"estimate_only"`
}

// QueryResultOut converts r for the wire.
func QueryResultOut(r *db.QueryResult) QueryResultJSON {
	out := QueryResultJSON{Matches: make([]MatchJSON, len(r.Matches)), Found: r.Found, Threshold: r.Threshold,
		ExpectedRecall: r.ExpectedRecall, Candidates: r.Candidates, EstimateOnly: r.EstimateOnly}
	for i, m := range r.Matches {
		out.Matches[i] = MatchOut(m, r.EstimateOnly)
	}
	return out
}

// MatchOut converts m for the wire.
func MatchOut(m db.Match, estimateOnly bool) MatchJSON {
	out := MatchJSON{ID: m.ID, Estimate: Similarity(m.Estimate), Bands: m.Bands, Text: m.Text}
	out.Meta, out.MetaBase64 = metaOut(m.Meta)
	if !estimateOnly {
		out.Jaccard = SimilarityOf(&m.Jaccard)
	}
	return out
}

// Match converts m back.
func (m MatchJSON) Match() db.Match {
	out := db.Match{ID: m.ID, Estimate: float64(m.Estimate), Bands: m.Bands, Text: m.Text}
	if m.Jaccard != nil {
		out.Jaccard = float64(*m.Jaccard)
	}
	// NB: a server's metaOut never gives both forms; bad base64 from
	// another server leaves Meta nil rather than failing the query.
	out.Meta, _ = metaIn(m.Meta, m.MetaBase64)
	return out
}

// QueryResult converts r back.
func (r QueryResultJSON) QueryResult() *db.QueryResult {
	out := &db.QueryResult{Found: max(r.Found, len(r.Matches)), Threshold: r.Threshold, ExpectedRecall: r.ExpectedRecall, Candidates: r.Candidates, EstimateOnly: r.EstimateOnly}
	for _, m := range r.Matches {
		out.Matches = append(out.Matches, m.Match())
	}
	return out
}

// PairJSON is one line of GET /v1/pairs, as lshdb pairs --output json.
type PairJSON struct {
	A              string      `json:"a"`
	B              string      `json:"b"`
	Jaccard        Similarity  `json:"jaccard"`
	ExpectedRecall *Similarity `json:"expected_recall,omitempty"`
	// EstimateOnly says Jaccard is the signatures' estimate (an index of
	// storage none), as lshdb pairs --output json says on each line.
	EstimateOnly bool `json:"estimate_only,omitempty"`
}

// PairGroupJSON is one line of GET /v1/pairs/groups (db.PairGroup):
// with B absent, every pair of two of A's documents (identical sets,
// Jaccard 1); otherwise every pair of one of A and one of B, at Jaccard.
// Pairs is how many pairs it stands for.
type PairGroupJSON struct {
	A              []string    `json:"a"`
	B              []string    `json:"b,omitempty"`
	Jaccard        Similarity  `json:"jaccard"`
	Pairs          int64       `json:"pairs"`
	ExpectedRecall *Similarity `json:"expected_recall,omitempty"`
	EstimateOnly   bool        `json:"estimate_only,omitempty"`
}

// ClusterJSON is one line of GET /v1/clusters (and POST /v1/clusters),
// as lshdb clusters --output json.
type ClusterJSON struct {
	Cluster int `json:"cluster"`
	Size    int `json:"size"`
	// Mode is components or centers (db.ClusterMode).
	Mode string `json:"mode"`
	// Keep is the policy that chose the representative (db.KeepPolicy).
	Keep string `json:"keep"`
	// Representative is the member to keep (ids[0]).
	Representative string `json:"representative"`
	// MinJaccard is db.Cluster.MinJaccard: in components mode the least
	// Jaccard of the verified pairs inside the cluster (its chain's
	// weakest link), in centers mode the least member's Jaccard to the
	// representative.
	MinJaccard Similarity          `json:"min_jaccard"`
	IDs        []string            `json:"ids"`
	Members    []ClusterMemberJSON `json:"members"`
	// ExpectedRecall is set only when the threshold is below the index's.
	ExpectedRecall *Similarity `json:"expected_recall,omitempty"`
	// EstimateOnly says the similarities (min_jaccard, the members'
	// jaccard) are the signatures' estimates (an index of storage none),
	// as a pairs line's estimate_only says.
	EstimateOnly bool `json:"estimate_only,omitempty"`
}

// ClusterMemberJSON is one member of a ClusterJSON, in the order of ids.
type ClusterMemberJSON struct {
	ID string `json:"id"`
	// DuplicateOf is the representative; null for the representative.
	DuplicateOf *string `json:"duplicate_of"`
	// Jaccard is the exact Jaccard to the representative (1 for it); the
	// signatures' estimate of it where the cluster says estimate_only.
	Jaccard Similarity `json:"jaccard"`
}

// ClusterOut converts the i-th cluster (from 1) for the wire.
func ClusterOut(i int, c db.Cluster, mode db.ClusterMode, keep db.KeepPolicy, rec *float64) ClusterJSON {
	out := ClusterJSON{Cluster: i, Size: len(c.IDs), Mode: string(mode), Keep: string(keep), Representative: c.Representative,
		MinJaccard: Similarity(c.MinJaccard), IDs: c.IDs, Members: make([]ClusterMemberJSON, len(c.IDs)), ExpectedRecall: SimilarityOf(rec)}
	for k, id := range c.IDs {
		out.Members[k] = ClusterMemberJSON{ID: id, Jaccard: Similarity(c.Jaccard[k])}
		if k > 0 {
			out.Members[k].DuplicateOf = &out.Representative
		}
	}
	return out
}

// DBCluster converts c back. A cluster whose members are not its ids, one
// for one, is refused: a server older than members sends none, and the
// cluster made of it had no Jaccard for its ids, which indexed past its
// end (lshdb clusters and filter attached to such a server panicked: a
// fuzz campaign's F1).
func (c ClusterJSON) DBCluster() (db.Cluster, error) {
	if len(c.Members) != len(c.IDs) || len(c.IDs) == 0 {
		return db.Cluster{}, fmt.Errorf("a cluster of %d ids with %d members (a server older than this client sends none: upgrade it)", len(c.IDs), len(c.Members))
	}
	out := db.Cluster{Representative: c.Representative, IDs: c.IDs, Jaccard: make([]float64, len(c.Members)), MinJaccard: float64(c.MinJaccard)}
	for k, m := range c.Members {
		if m.ID != c.IDs[k] {
			return db.Cluster{}, fmt.Errorf("a cluster whose member %d is %q and id %d %q", k, m.ID, k, c.IDs[k])
		}
		out.Jaccard[k] = float64(m.Jaccard)
	}
	return out, nil
}

// EndJSON is the last line of a stream that completed: a stream without
// it was cut short. Pairs carries the run's statistics.
type EndJSON struct {
	End EndBody `json:"end"`
}

// EndBody counts the lines a stream sent.
type EndBody struct {
	Lines int             `json:"lines"`
	Stats *PairsStatsJSON `json:"stats,omitempty"`
}

// PairsStatsJSON is db.PairsStats, as lshdb bench reports it.
type PairsStatsJSON struct {
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

// PairsStatsOut converts s for the wire.
func PairsStatsOut(s db.PairsStats) *PairsStatsJSON {
	return &PairsStatsJSON{Docs: s.Docs, IdenticalGroups: s.IdenticalGroups, IdenticalPairs: s.IdenticalPairs,
		Lists: s.Lists, HotLists: s.HotLists, LargestList: s.LargestList, Candidates: s.Candidates,
		Filtered: s.Filtered, Verified: s.Verified, Matched: s.Matched, Reported: s.Reported, Spilled: s.Spilled}
}

// PairsStats converts s back.
func (s PairsStatsJSON) PairsStats() db.PairsStats {
	return db.PairsStats{Docs: s.Docs, IdenticalGroups: s.IdenticalGroups, IdenticalPairs: s.IdenticalPairs,
		Lists: s.Lists, HotLists: s.HotLists, LargestList: s.LargestList, Candidates: s.Candidates,
		Filtered: s.Filtered, Verified: s.Verified, Matched: s.Matched, Reported: s.Reported, Spilled: s.Spilled}
}

// ParamsJSON is db.Params, with the keys of lshdb create --output json,
// and the largest document the server accepts.
type ParamsJSON struct {
	Threshold      float64  `json:"threshold"`
	Recall         float64  `json:"recall"`
	Bands          int      `json:"bands"`
	Rows           int      `json:"rows"`
	NumPerm        int      `json:"num_perm"`
	Scheme         string   `json:"scheme"`
	Seed           uint64   `json:"seed"`
	Shingle        string   `json:"shingle"`
	ShingleSize    int      `json:"shingle_size"`
	Bag            bool     `json:"bag"`
	Normalization  string   `json:"normalization"`
	StopWords      []string `json:"stop_words"`
	StoreText      bool     `json:"store_text"`
	Storage        string   `json:"storage"`
	FormatVersion  int      `json:"format_version"`
	ExpectedRecall float64  `json:"expected_recall"`
	MaxDocBytes    int      `json:"max_doc_bytes,omitempty"`
	// MaxBodyBytes is the server's bound on a request body
	// (Options.MaxBodyBytes; -1: none): absent from a server of an earlier
	// lshdb, which had DefaultMaxBodyBytes unless told otherwise.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// MaxBatch is the server's bound on the documents (or queries) of
	// one request (Options.MaxBatch; -1: none): absent from a server of an
	// earlier lshdb, which had none.
	MaxBatch int `json:"max_batch,omitempty"`
	// IdleTimeoutMS is the server's keep-alive idle timeout in
	// milliseconds (Options.IdleTimeout), in /v1/params only: absent when
	// the server did not say (none, or an earlier lshdb). A client keeps
	// an idle connection for less (the Go client: half of it).
	IdleTimeoutMS int64 `json:"idle_timeout_ms,omitempty"`
	// Instance is the server's index's (db.Info.Instance), with
	// MaxDocBytes and MaxBodyBytes in /v1/params only.
	Instance      string `json:"instance,omitempty"`
	*EstimateJSON        // storage none only
}

// EstimateJSON is what an estimate-only (storage none) index says of its
// recall beside expected_recall, which is P(candidate) alone: its
// db.EstimateFigures, in the keys of lshdb info and stats.
type EstimateJSON struct {
	EstimateOnly bool `json:"estimate_only"`
	// EstimateSD is EstimateFigures.SD.
	EstimateSD float64 `json:"estimate_sd"`
	// RecallAtThreshold is EstimateFigures.RecallAtThreshold.
	RecallAtThreshold float64 `json:"estimate_only_recall_at_threshold"`
}

// EstimateOut is p's EstimateJSON: nil unless its storage is none.
func EstimateOut(p db.Params) *EstimateJSON {
	f, ok := p.EstimateFigures()
	if !ok {
		return nil
	}
	return &EstimateJSON{EstimateOnly: true, EstimateSD: f.SD, RecallAtThreshold: f.RecallAtThreshold}
}

// ParamsOut converts p for the wire.
func ParamsOut(p db.Params) ParamsJSON {
	return ParamsJSON{Threshold: p.Threshold, Recall: p.Recall, Bands: p.Bands.B, Rows: p.Bands.R, NumPerm: p.NumPerm,
		Scheme: p.Scheme.String(), Seed: p.Seed, Shingle: p.Shingle.String(), ShingleSize: p.ShingleSize, Bag: p.Bag,
		Normalization: p.Normalization.String(), StopWords: nonNil(p.StopWords), StoreText: p.StoreText,
		Storage: p.Storage, FormatVersion: p.FormatVersion, ExpectedRecall: p.Bands.Probability(p.Threshold),
		EstimateJSON: EstimateOut(p)}
}

// Params converts p back.
func (p ParamsJSON) Params() (db.Params, error) {
	scheme, err := minhash.ParseScheme(p.Scheme)
	if err != nil {
		return db.Params{}, err
	}
	kind, err := minhash.ParseShingleKind(p.Shingle)
	if err != nil {
		return db.Params{}, err
	}
	norm, err := minhash.ParseNormalization(p.Normalization)
	if err != nil {
		return db.Params{}, err
	}
	return db.Params{Threshold: p.Threshold, Recall: p.Recall, Bands: bands.Params{B: p.Bands, R: p.Rows},
		Scheme: scheme, NumPerm: p.NumPerm, Seed: p.Seed, Shingle: kind, ShingleSize: p.ShingleSize, Bag: p.Bag,
		Normalization: norm, StopWords: nilIfEmpty(p.StopWords), StoreText: p.StoreText, Storage: p.Storage,
		FormatVersion: p.FormatVersion}, nil
}

// BucketJSON is one posting list, as lshdb buckets prints it.
type BucketJSON struct {
	Band   int      `json:"band"`
	Bucket string   `json:"bucket"` // 8 hex digits, as lshdb bucket takes it
	Size   int      `json:"size"`
	Sample []string `json:"sample,omitempty"`
	// Also is db.BucketInfo.Also: the other bands' lists of mostly the
	// same members.
	Also []BandBucketJSON `json:"also,omitempty"`
}

// BandBucketJSON names a posting list, its bucket as BucketJSON's.
type BandBucketJSON struct {
	Band   int    `json:"band"`
	Bucket string `json:"bucket"`
}

// BucketHex is how a bucket id is written: 8 hex digits (buckets are 32
// bits since index format 2).
func BucketHex(b uint64) string { return fmt.Sprintf("%08x", b) }

// ParseBucket reads a bucket id as BucketHex writes it (a 0x prefix
// allowed).
func ParseBucket(s string) (uint64, error) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s = s[2:]
	}
	b, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, badRequest("bucket %q is not a hexadecimal number of at most 8 digits", s)
	}
	return b, nil
}

// BucketsOut converts hot lists for the wire (and the command's JSON).
func BucketsOut(hs []db.BucketInfo) []BucketJSON {
	out := make([]BucketJSON, len(hs))
	for i, h := range hs {
		out[i] = BucketJSON{Band: h.Band, Bucket: BucketHex(h.Bucket), Size: h.Size, Sample: h.Sample}
		for _, o := range h.Also {
			out[i].Also = append(out[i].Also, BandBucketJSON{Band: o.Band, Bucket: BucketHex(o.Bucket)})
		}
	}
	return out
}

func bucketsIn(hs []BucketJSON) ([]db.BucketInfo, error) {
	var out []db.BucketInfo
	for _, h := range hs {
		b, err := ParseBucket(h.Bucket)
		if err != nil {
			return nil, err
		}
		info := db.BucketInfo{Band: h.Band, Bucket: b, Size: h.Size, Sample: h.Sample}
		for _, o := range h.Also {
			ob, err := ParseBucket(o.Bucket)
			if err != nil {
				return nil, err
			}
			info.Also = append(info.Also, db.BandBucket{Band: o.Band, Bucket: ob})
		}
		out = append(out, info)
	}
	return out, nil
}

// BucketStatsJSON is db.BucketStats, as lshdb buckets --output json.
type BucketStatsJSON struct {
	Band *int `json:"band,omitempty"`
	// PostingLists is the lists read (of Band, or of every band), as the
	// command's buckets --output json gives it (an API client's A-3).
	PostingLists int          `json:"posting_lists"`
	Lists        []int        `json:"posting_lists_per_band"`
	Histogram    []int        `json:"bucket_size_histogram"`
	Hottest      []BucketJSON `json:"hottest"`
}

// BucketStatsOut converts s for the wire; band < 0 is all bands.
func BucketStatsOut(s *db.BucketStats, band int) BucketStatsJSON {
	out := BucketStatsJSON{Lists: nonNil(s.Lists), Histogram: nonNil(s.Histogram), Hottest: BucketsOut(s.Hottest)}
	for _, n := range s.Lists {
		out.PostingLists += n // NB: of one band, the others are 0
	}
	if band >= 0 {
		out.Band = &band
	}
	return out
}

// BucketStats converts s back.
func (s BucketStatsJSON) BucketStats() (*db.BucketStats, error) {
	h, err := bucketsIn(s.Hottest)
	return &db.BucketStats{Lists: nilIfEmpty(s.Lists), Histogram: nilIfEmpty(s.Histogram), Hottest: h}, err
}

// BucketMembersJSON is the answer of GET /v1/buckets/{band}/{bucket}.
type BucketMembersJSON struct {
	Band   int      `json:"band"`
	Bucket string   `json:"bucket"`
	IDs    []string `json:"ids"`
}

// ByteCountsJSON is stored or table bytes by record kind.
type ByteCountsJSON struct {
	Docs             uint64 `json:"docs"`
	IDs              uint64 `json:"ids"`
	Postings         uint64 `json:"postings"`
	Expiry           uint64 `json:"expiry"`
	ManifestCounters uint64 `json:"manifest_and_counters"`
}

// The record kinds of db.Stats' byte maps.
const (
	kindDocs     = "docs"
	kindIDs      = "ids"
	kindPostings = "postings"
	kindExpiry   = "expiry"
	kindManifest = "manifest+counters"
)

func byteCountsOut(m map[string]uint64) ByteCountsJSON {
	return ByteCountsJSON{Docs: m[kindDocs], IDs: m[kindIDs], Postings: m[kindPostings], Expiry: m[kindExpiry], ManifestCounters: m[kindManifest]}
}

// byteCounts converts c back; all says whether every kind is in the map
// (StoredBytes) or only those with bytes (TableBytes, which counts only
// the kinds some table starts with).
func (c ByteCountsJSON) byteCounts(all bool) map[string]uint64 {
	m := map[string]uint64{}
	for k, v := range map[string]uint64{kindDocs: c.Docs, kindIDs: c.IDs, kindPostings: c.Postings, kindExpiry: c.Expiry, kindManifest: c.ManifestCounters} {
		if all || v > 0 {
			m[k] = v
		}
	}
	return m
}

// RecallJSON is db.RecallEstimate; miss_ratio is null when not measured
// (NaN, which JSON cannot carry).
type RecallJSON struct {
	Threshold float64  `json:"threshold"`
	Curve     float64  `json:"curve"`
	ShortDocs float64  `json:"short_docs"`
	MissRatio *float64 `json:"miss_ratio"`
	Measured  bool     `json:"measured"`
}

// InfoJSON is db.Info on the wire.
type InfoJSON struct {
	Params ParamsJSON `json:"params"`
	Docs   uint64     `json:"docs"`
	// Expired is db.Info.Expired: the part of docs past its expiry,
	// awaiting the sweep.
	Expired   uint64 `json:"expired,omitempty"`
	Written   uint64 `json:"written"`
	DiskBytes uint64 `json:"disk_bytes"`
	TempBytes uint64 `json:"temp_bytes,omitempty"`
	// RecycledLogBytes is db.Info.RecycledLogBytes.
	RecycledLogBytes uint64 `json:"recycled_log_bytes,omitempty"`
	// DamagedLogCopies is db.Info.DamagedLogCopies.
	DamagedLogCopies []string `json:"damaged_log_copies,omitempty"`
	// LogBytes is db.Info.LogBytes.
	LogBytes uint64      `json:"log_bytes,omitempty"`
	Instance string      `json:"instance,omitempty"`
	Origin   *OriginJSON `json:"origin,omitempty"`
	Redis    bool        `json:"redis,omitempty"`
}

// OriginJSON is db.Origin on the wire.
type OriginJSON struct {
	Instance string `json:"instance"`
	Written  uint64 `json:"written"`
	Docs     uint64 `json:"docs"`
	Instant  bool   `json:"instant"`
}

// OriginOut converts o for the wire (nil: none).
func OriginOut(o *db.Origin) *OriginJSON {
	if o == nil {
		return nil
	}
	return &OriginJSON{Instance: o.Instance, Written: o.Written, Docs: o.Docs, Instant: o.Instant}
}

// Origin converts o back (nil: none).
func (o *OriginJSON) Origin() *db.Origin {
	if o == nil {
		return nil
	}
	return &db.Origin{Instance: o.Instance, Written: o.Written, Docs: o.Docs, Instant: o.Instant}
}

// InfoOut converts in for the wire.
func InfoOut(in *db.Info) InfoJSON {
	return InfoJSON{Params: ParamsOut(in.Params), Docs: in.Docs, Expired: in.Expired, Written: in.Written, DiskBytes: in.DiskBytes, TempBytes: in.TempBytes, LogBytes: in.LogBytes, RecycledLogBytes: in.RecycledLogBytes, DamagedLogCopies: in.DamagedLogCopies, Instance: in.Instance, Origin: OriginOut(in.Origin), Redis: in.Redis}
}

// Info converts in back.
func (in InfoJSON) Info() (*db.Info, error) {
	p, err := in.Params.Params()
	if err != nil {
		return nil, err
	}
	return &db.Info{Params: p, Docs: in.Docs, Expired: in.Expired, Written: in.Written, DiskBytes: in.DiskBytes, TempBytes: in.TempBytes, LogBytes: in.LogBytes, RecycledLogBytes: in.RecycledLogBytes, DamagedLogCopies: in.DamagedLogCopies, Instance: in.Instance, Origin: in.Origin.Origin(), Redis: in.Redis}, nil
}

// StatsJSON is db.Stats, with the keys of lshdb stats --output json and
// the rest of the parameters and the recall estimate.
type StatsJSON struct {
	Docs                uint64         `json:"docs"`
	Threshold           float64        `json:"threshold"`
	Bands               int            `json:"bands"`
	Rows                int            `json:"rows"`
	NumPerm             int            `json:"num_perm"`
	Scheme              string         `json:"scheme"`
	Shingle             string         `json:"shingle"`
	ShingleSize         int            `json:"shingle_size"`
	Bag                 bool           `json:"bag"`
	StoreText           bool           `json:"store_text"`
	Storage             string         `json:"storage"`
	FormatVersion       int            `json:"format_version"`
	ExpectedRecall      float64        `json:"expected_recall"`
	ExpectedRecallShort *float64       `json:"expected_recall_short_docs,omitempty"`
	PostingListsPerBand []int          `json:"posting_lists_per_band"`
	BucketSizeHistogram []int          `json:"bucket_size_histogram"`
	StoredBytes         ByteCountsJSON `json:"stored_bytes"`
	DiskBytes           uint64         `json:"disk_bytes"`
	TableBytes          ByteCountsJSON `json:"table_bytes"`
	LogBytes            uint64         `json:"log_bytes,omitempty"`
	RecycledLogBytes    uint64         `json:"recycled_log_bytes,omitempty"`
	Hottest             []BucketJSON   `json:"hottest"`
	Expired             int            `json:"expired,omitempty"`
	Expiring            int            `json:"expiring,omitempty"`
	*EstimateJSON                      // storage none only
	// Beyond the command's keys:
	Params ParamsJSON `json:"params"`
	Recall RecallJSON `json:"recall"`
}

// StatsOut converts s for the wire.
func StatsOut(s *db.Stats) StatsJSON {
	p := s.Params
	out := StatsJSON{Docs: s.Docs, Threshold: p.Threshold, Bands: p.Bands.B, Rows: p.Bands.R, NumPerm: p.NumPerm,
		Scheme: p.Scheme.String(), Shingle: p.Shingle.String(), ShingleSize: p.ShingleSize, Bag: p.Bag,
		StoreText: p.StoreText, Storage: p.Storage, FormatVersion: p.FormatVersion, ExpectedRecall: s.ExpectedRecall,
		StoredBytes: byteCountsOut(s.StoredBytes), DiskBytes: s.DiskBytes, TableBytes: byteCountsOut(s.TableBytes), LogBytes: s.LogBytes, RecycledLogBytes: s.RecycledLogBytes,
		Params: ParamsOut(p), Expired: s.Expired, Expiring: s.Expiring, EstimateJSON: EstimateOut(p),
		Recall: RecallJSON{Threshold: s.Recall.Threshold, Curve: s.Recall.Curve, ShortDocs: s.Recall.ShortDocs, Measured: s.Recall.Measured}}
	if s.Recall.Measured {
		out.ExpectedRecallShort = &s.Recall.ShortDocs
	}
	if !math.IsNaN(s.Recall.MissRatio) {
		r := s.Recall.MissRatio
		out.Recall.MissRatio = &r
	}
	bs := s.Buckets
	if bs == nil {
		bs = &db.BucketStats{}
	}
	out.PostingListsPerBand, out.BucketSizeHistogram, out.Hottest = nonNil(bs.Lists), nonNil(bs.Histogram), BucketsOut(bs.Hottest)
	return out
}

// Stats converts s back.
func (s StatsJSON) Stats() (*db.Stats, error) {
	p, err := s.Params.Params()
	if err != nil {
		return nil, err
	}
	hot, err := bucketsIn(s.Hottest)
	if err != nil {
		return nil, err
	}
	out := &db.Stats{Params: p, Docs: s.Docs, ExpectedRecall: s.ExpectedRecall,
		Recall:      db.RecallEstimate{Threshold: s.Recall.Threshold, Curve: s.Recall.Curve, ShortDocs: s.Recall.ShortDocs, MissRatio: math.NaN(), Measured: s.Recall.Measured},
		StoredBytes: s.StoredBytes.byteCounts(true), DiskBytes: s.DiskBytes, TableBytes: s.TableBytes.byteCounts(false), LogBytes: s.LogBytes, RecycledLogBytes: s.RecycledLogBytes,
		Buckets: &db.BucketStats{Lists: nilIfEmpty(s.PostingListsPerBand), Histogram: nilIfEmpty(s.BucketSizeHistogram), Hottest: hot},
		Expired: s.Expired, Expiring: s.Expiring}
	if s.Recall.MissRatio != nil {
		out.Recall.MissRatio = *s.Recall.MissRatio
	}
	return out, nil
}

// ExplainJSON is db.Explanation, with the keys of lshdb explain --output
// json and the band keys.
type ExplainJSON struct {
	A              string     `json:"a"`
	B              string     `json:"b"`
	Jaccard        Similarity `json:"jaccard"`
	Estimate       Similarity `json:"estimate"`
	EstimateOnly   bool       `json:"estimate_only"`
	Threshold      float64    `json:"threshold"`
	Bands          int        `json:"bands"`
	CollidingBands []int      `json:"colliding_bands"`
	// UnlistedBands are colliding bands whose list does not name both
	// (db.Explanation.Unlisted).
	UnlistedBands []int    `json:"unlisted_bands,omitempty"`
	PCandidate    float64  `json:"p_candidate"`
	SetLenA       int      `json:"set_size_a"`
	SetLenB       int      `json:"set_size_b"`
	SizesRuleOut  bool     `json:"sizes_rule_out"`
	Found         bool     `json:"found"`
	BandKeysA     []string `json:"band_keys_a"`
	BandKeysB     []string `json:"band_keys_b"`
}

// ExplainOut converts e for the wire.
func ExplainOut(e *db.Explanation) ExplainJSON {
	out := ExplainJSON{A: e.A, B: e.B, Jaccard: Similarity(e.Jaccard), Estimate: Similarity(e.Estimate), EstimateOnly: e.EstimateOnly,
		Threshold: e.Threshold, Bands: len(e.Collide), CollidingBands: []int{}, PCandidate: e.Probability, Found: e.Found,
		SetLenA: e.SetLenA, SetLenB: e.SetLenB, SizesRuleOut: e.SizesRuleOut, UnlistedBands: e.Unlisted,
		BandKeysA: make([]string, len(e.BandKeysA)), BandKeysB: make([]string, len(e.BandKeysB))}
	for i, c := range e.Collide {
		if c {
			out.CollidingBands = append(out.CollidingBands, i)
		}
	}
	for i, k := range e.BandKeysA {
		out.BandKeysA[i] = BucketHex(k)
	}
	for i, k := range e.BandKeysB {
		out.BandKeysB[i] = BucketHex(k)
	}
	return out
}

// Explanation converts e back.
func (e ExplainJSON) Explanation() (*db.Explanation, error) {
	out := &db.Explanation{A: e.A, B: e.B, Jaccard: float64(e.Jaccard), Estimate: float64(e.Estimate), EstimateOnly: e.EstimateOnly,
		Threshold: e.Threshold, Probability: e.PCandidate, Found: e.Found, SetLenA: e.SetLenA, SetLenB: e.SetLenB, SizesRuleOut: e.SizesRuleOut}
	if e.Bands < 0 || e.Bands > 1<<16 {
		return nil, fmt.Errorf("explain: %d bands", e.Bands)
	}
	if e.Bands > 0 {
		out.Collide = make([]bool, e.Bands)
	}
	for _, i := range e.CollidingBands {
		if i < 0 || i >= e.Bands {
			return nil, fmt.Errorf("explain: colliding band %d of %d", i, e.Bands)
		}
		out.Collide[i] = true
	}
	for _, i := range e.UnlistedBands {
		if i < 0 || i >= e.Bands || !out.Collide[i] {
			return nil, fmt.Errorf("explain: unlisted band %d of %d, not a colliding one", i, e.Bands)
		}
		out.Unlisted = append(out.Unlisted, i)
	}
	for _, k := range e.BandKeysA {
		b, err := ParseBucket(k)
		if err != nil {
			return nil, err
		}
		out.BandKeysA = append(out.BandKeysA, b)
	}
	for _, k := range e.BandKeysB {
		b, err := ParseBucket(k)
		if err != nil {
			return nil, err
		}
		out.BandKeysB = append(out.BandKeysB, b)
	}
	return out, nil
}

// CheckJSON is db.CheckReport, as lshdb check --output json.
type CheckJSON struct {
	Docs         int      `json:"docs"`
	IDs          int      `json:"ids"`
	PostingLists int      `json:"posting_lists"`
	EmptyLists   int      `json:"empty_lists"`
	Postings     int      `json:"postings"`
	Problems     []string `json:"problems"` // [] when clean, never null; the first 100
	// ProblemCount is every problem found, those not listed included
	// (absent from an earlier lshdb's answer).
	ProblemCount int  `json:"problem_count"`
	OK           bool `json:"ok"`
	// Expired is db.CheckReport.Expired (absent from an earlier lshdb's
	// answer, and when none).
	Expired int `json:"expired,omitempty"`
}

// CheckOut converts r for the wire.
func CheckOut(r *db.CheckReport) CheckJSON {
	return CheckJSON{Docs: r.Docs, IDs: r.IDs, PostingLists: r.PostingLists, EmptyLists: r.EmptyLists,
		Postings: r.Postings, Problems: nonNil(r.Problems), ProblemCount: r.ProblemCount, OK: r.OK(), Expired: r.Expired}
}

// CheckReport converts r back.
func (r CheckJSON) CheckReport() *db.CheckReport {
	return &db.CheckReport{Docs: r.Docs, IDs: r.IDs, PostingLists: r.PostingLists, EmptyLists: r.EmptyLists,
		Postings: r.Postings, Problems: nilIfEmpty(r.Problems), ProblemCount: max(r.ProblemCount, len(r.Problems)), Expired: r.Expired}
}

// RepairJSON is db.RepairResult, the answer of POST /v1/repair and lshdb
// check --repair --output json's first line.
type RepairJSON struct {
	Orphans  int      `json:"orphans"`
	Dangling int      `json:"dangling"`
	Reposted int      `json:"reposted"`
	Lost     []string `json:"lost"` // [] when none, never null
	// Unnamed (Redis) are the ids of the removed records no id named;
	// absent from a server's answer (a server does not repair Redis).
	Unnamed []string `json:"unnamed,omitempty"`
	// Unrestored (Redis) are the ids of the records no id named, left as
	// they are (Redis lost writes, and the repair was asked neither to
	// give their ids back nor to remove them; or no room at maxmemory
	// to give them back); absent when none.
	Unrestored []string `json:"unrestored,omitempty"`
	// LostWrites (Redis): Redis showed it lost writes; absent when not.
	LostWrites bool `json:"lost_writes,omitempty"`
	Unreadable int  `json:"unreadable"`
	Restored   int  `json:"restored"`
	Rewritten  int  `json:"rewritten"`
	// RewrittenIDs are the ids of the Rewritten records ([] when none).
	RewrittenIDs []string `json:"rewritten_ids"`
	Lists        int      `json:"lists"`
	Damaged      int      `json:"damaged"`
	Expiry       int      `json:"expiry"`
	BadKeys      int      `json:"bad_keys"`
	Counters     bool     `json:"counters"`
	// LogCuts are db.RepairResult.LogCuts: the logs the open cut at their
	// damage; absent when none (a server's open cuts none).
	LogCuts []LogCutJSON `json:"log_cuts,omitempty"`
	Changed bool         `json:"changed"`
}

// LogCutJSON is db.LogCut on the wire.
type LogCutJSON struct {
	Log      string   `json:"log"`
	Kept     string   `json:"kept,omitempty"`
	Manifest bool     `json:"manifest,omitempty"`
	Records  int      `json:"records"`
	Puts     []string `json:"puts"`    // [] when none, never null
	Deletes  []string `json:"deletes"` // [] when none, never null
	Unread   int      `json:"unread"`
}

// RepairOut converts r for the wire.
func RepairOut(r db.RepairResult) RepairJSON {
	return RepairJSON{Orphans: r.Orphans, Dangling: r.Dangling, Reposted: r.Reposted, Lost: nonNil(r.Lost), Unnamed: r.Unnamed, Unrestored: r.Unrestored, LostWrites: r.LostWrites,
		Unreadable: r.Unreadable, Restored: r.Restored, Rewritten: r.Rewritten, RewrittenIDs: nonNil(r.RewrittenIDs), Lists: r.Lists, Damaged: r.Damaged, Expiry: r.Expiry,
		BadKeys: r.BadKeys, Counters: r.Counters, LogCuts: logCutsOut(r.LogCuts), Changed: r.Changed()}
}

func logCutsOut(cs []db.LogCut) []LogCutJSON {
	var out []LogCutJSON
	for _, c := range cs {
		out = append(out, LogCutJSON{Log: c.Log, Kept: c.Kept, Manifest: c.Manifest, Records: c.Records, Puts: nonNil(c.Puts), Deletes: nonNil(c.Deletes), Unread: c.Unread})
	}
	return out
}

// RepairResult converts r back.
func (r RepairJSON) RepairResult() db.RepairResult {
	return db.RepairResult{Orphans: r.Orphans, Dangling: r.Dangling, Reposted: r.Reposted, Lost: nilIfEmpty(r.Lost), Unnamed: r.Unnamed, Unrestored: r.Unrestored, LostWrites: r.LostWrites,
		Unreadable: r.Unreadable, Restored: r.Restored, Rewritten: r.Rewritten, RewrittenIDs: nilIfEmpty(r.RewrittenIDs), Lists: r.Lists, Damaged: r.Damaged, Expiry: r.Expiry,
		BadKeys: r.BadKeys, Counters: r.Counters, LogCuts: logCutsIn(r.LogCuts)}
}

func logCutsIn(cs []LogCutJSON) []db.LogCut {
	var out []db.LogCut
	for _, c := range cs {
		out = append(out, db.LogCut{Log: c.Log, Kept: c.Kept, Manifest: c.Manifest, Records: c.Records, Puts: nilIfEmpty(c.Puts), Deletes: nilIfEmpty(c.Deletes), Unread: c.Unread})
	}
	return out
}

// TuneJSON is the answer of GET /v1/tune, as lshdb tune --db --output
// json.
type TuneJSON struct {
	Bands                 int           `json:"bands"`
	Rows                  int           `json:"rows"`
	Threshold             float64       `json:"threshold"`
	SCurveThreshold       float64       `json:"s_curve_threshold"`
	PAtThreshold          float64       `json:"p_at_threshold"`
	PAtThresholdShortDocs *float64      `json:"p_at_threshold_short_docs,omitempty"`
	Scheme                string        `json:"scheme"`
	FalsePositiveArea     float64       `json:"false_positive_area"`
	FalseNegativeArea     float64       `json:"false_negative_area"`
	Table                 []bands.Point `json:"table"`
}

// BackupRequest is the body of POST /v1/backup.
type BackupRequest struct {
	Dir string `json:"dir"`
	// Copy gives the copy files of its own (db.BackupOptions.Copy).
	Copy bool `json:"copy,omitempty"`
	// Verify checks the copy before it gets its name
	// (db.BackupOptions.Verify): a damaged one is 500 corrupt, and moved
	// aside.
	Verify bool `json:"verify,omitempty"`
}

// HealthJSON is the answer of GET /healthz.
type HealthJSON struct {
	// Status is "ok"; "disk_full" when writes are refused for want of
	// space (reads are served: 200 still); "damaged" (503) once the
	// index's background work met damage to its files: run lshdb check;
	// "stopped" (503) once its store stopped at a write it could not
	// finish (db.ErrStopped): restart the server; "gone" (503) once a
	// Redis index is gone from under the handle (db.ErrNotExist).
	// (A server that waits for the process that holds its index answers
	// 503 "waiting", without the count: WaitingHandler.)
	Status string `json:"status"`
	// Error says what is wrong when Status is not "ok".
	Error string `json:"error,omitempty"`
	Docs  uint64 `json:"docs"`
	// PID is the serving process's, the index's owner: what to signal
	// (SIGTERM) to stop it.
	PID int `json:"pid"`
	// Owner names the serving process where it said (Options.Owner):
	// "lshdb serve", or the lshdb command that serves the index while it
	// runs ("lshdb insert").
	Owner string `json:"owner,omitempty"`
	// ReadOnly, where the index is served read-only, is the refusal a
	// write gets (read_only's message: it ends with OwnerReadsOnly, an
	// owner that reads for a while and then ends, or ServerReadsOnly), so
	// that a write that cannot be sent twice (a load, which streams its
	// input) can wait for a writer before it starts. Absent: writes are
	// taken.
	ReadOnly string `json:"read_only,omitempty"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
