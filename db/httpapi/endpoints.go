package httpapi

// The endpoints: one function per route of Handler.

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/internal/fspath"
)

// healthz answers 200 while the index serves reads: "ok", or "disk_full"
// when writes are refused for want of space; 503 "stopped" once the store
// stopped at a failed write (db.ErrStopped: a restart mends it); and 503
// "damaged" once its
// background work met damage to its files (db.DB.Corruption), which an
// operator must see: the server goes on serving what it can, and only
// lshdb check (after a restart) tells how far the damage goes; 503
// "gone" once a Redis index is gone from under the handle (its writes
// and reads are refused as db.ErrNotExist until a restart). Over TCP
// to a server with a token, a request without it gets the status alone.
func (h *handler) healthz(w *resp, r *http.Request) error {
	n, err := h.d.Count()
	gone := errors.Is(err, db.ErrNotExist)
	if err != nil && !gone {
		return err
	}
	hj := HealthJSON{Status: "ok", Docs: n, PID: os.Getpid(), Owner: h.o.Owner}
	status := http.StatusOK
	room := h.d.RoomToWrite()
	switch damage := h.d.Corruption(); {
	case gone:
		// NB: a Redis index gone under its server (lost to a restart
		// without persistence, dropped) answered 404 not_exist, which a
		// load balancer or an orchestrator does not take for a server
		// to restart (a review of serve, SV3-4).
		hj.Status, hj.Error, status = "gone", err.Error(), http.StatusServiceUnavailable
	case damage != nil:
		hj.Status, hj.Error, status = "damaged", damage.Error(), http.StatusServiceUnavailable
	case errors.Is(room, db.ErrStopped):
		// NB: a store that stopped at a failed write refuses every write
		// until a new process opens it: the server said "ok" (a
		// fault-injection review, FI-4), and nothing restarted it.
		hj.Status, hj.Error, status = "stopped", room.Error(), http.StatusServiceUnavailable
	case errors.Is(room, db.ErrDiskFull):
		hj.Status, hj.Error = "disk_full", room.Error()
	case errors.Is(room, db.ErrReadOnly):
		hj.ReadOnly = h.readOnlyRefusal(room).Error()
	}
	// NB: nor for a browser's request for another site, or one that
	// reached a loopback port under another host name (DNS rebinding),
	// which every other endpoint refuses: a rebound page read the pid,
	// the document count and a full disk's or damage's message (a
	// security review, SEC-6).
	if h.o.Token != "" && overTCP(r) && h.authorized(r) != nil || h.sameSite(r) != nil {
		// NB: /healthz needs no token, so that a load balancer may ask;
		// the rest (documents, pid, paths in errors) is for those who
		// hold it.
		return w.json(status, struct {
			Status string `json:"status"`
		}{hj.Status})
	}
	return w.json(status, hj)
}

func (h *handler) params(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	if _, err := h.d.Count(); err != nil { // NB: says closed once d is
		return err
	}
	p := ParamsOut(h.d.Params())
	p.MaxDocBytes = h.d.MaxDocBytes()
	p.MaxBodyBytes = max(h.o.MaxBodyBytes, -1)
	p.MaxBatch = max(h.o.MaxBatch, -1)
	if h.o.IdleTimeout > 0 {
		p.IdleTimeoutMS = max(h.o.IdleTimeout.Milliseconds(), 1)
	}
	p.Instance = h.d.Instance()
	return w.json(http.StatusOK, p)
}

func (h *handler) count(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	n, err := h.d.Count()
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, struct {
		Docs uint64 `json:"docs"`
	}{n})
}

func (h *handler) get(w *resp, r *http.Request) error {
	q, err := params(r, []string{"id", "sets"})
	if err == nil {
		err = required(q, "id")
	}
	if err != nil {
		return err
	}
	sets := true
	if q.Has("sets") {
		if sets, err = boolParam(q, "sets"); err != nil {
			return err
		}
	}
	doc, err := h.d.Get(q.Get("id"))
	if err != nil {
		return err
	}
	if !sets {
		// NB: sets=false leaves out the shingle set and the signature,
		// as scan's does: 16 hex digits a shingle made a 5 KB text's
		// answer 44 KB, which a client that shows the document does not
		// want (a Python client user's PY3).
		doc.Shingles, doc.Signature = nil, nil
	}
	return w.json(http.StatusOK, DocumentOut(doc))
}

func (h *handler) has(w *resp, r *http.Request) error {
	q, err := params(r, []string{"id"})
	if err == nil {
		err = required(q, "id")
	}
	if err != nil {
		return err
	}
	ok, err := h.d.Has(q.Get("id"))
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, struct {
		ID     string `json:"id"`
		Exists bool   `json:"exists"`
	}{q.Get("id"), ok})
}

func (h *handler) hasMany(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	var req HasRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if req.IDs == nil {
		return badRequest(`no ids: give {"ids": ["a", "b", …]} (GET /v1/docs/has?id= asks of one)`)
	}
	// NB: admitted among the work in flight, as a put's documents: a body
	// of 16 million short ids held about 1.2 GB while it was answered,
	// and four at once took a server to 4.8 GB. And it stops when its
	// client goes (or the server closes).
	release, err := h.admitIDs(r.Context(), req.IDs)
	if err != nil {
		return err
	}
	defer release()
	found, err := h.d.HasIDsContext(r.Context(), req.IDs)
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, HasResultJSON{Exists: found})
}

func (h *handler) put(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	// NB: the documents are counted as they are decoded: a body of
	// 800,000 small documents was decoded whole (0.4 GB) before its
	// count was refused.
	body := putBody{Docs: boundedList[DocJSON]{max: h.o.MaxBatch, field: "docs", noun: "documents",
		tooMany: "split them into several requests, or stream them (POST /v1/load, /v1/docs/put-if-new)"}}
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	req := body.PutRequest
	// NB: "docs": null leaves the list nil (a client's serializer writes
	// an unset list so): a dereference of it was a 500 for a valid put.
	req.Docs = body.Docs.items
	// NB: any field of a document makes the request one document: a
	// body with docs and a top-level tokens list took the docs and
	// dropped the tokens unsaid, and {"tokens": […]} with no id said "no
	// document".
	one := req.ID != "" || req.Text != "" || req.Meta != nil || req.MetaBase64 != nil ||
		req.Tokens != nil || req.Hashes != nil || req.Signature != nil
	if one && req.Docs != nil {
		return badRequest("give one document (id, text) or docs, not both")
	}
	in := req.Docs
	if one {
		in = []DocJSON{req.DocJSON}
	} else if in == nil {
		return badRequest("no document: give id and text, or docs")
	}
	var size int64
	for i := range in {
		size += docBytes(in[i].Text, in[i].Tokens, len(in[i].Hashes))
	}
	release, err := h.admit(r.Context(), len(in), size)
	if err != nil {
		return err
	}
	defer release()
	docs := make([]db.Doc, len(in))
	for i, dj := range in {
		var err error
		if docs[i], err = dj.Doc(); err != nil {
			return &db.DocError{Index: i, ID: dj.ID, Err: err}
		}
	}
	wo := db.WriteOptions{NoSync: req.NoSync, StoreText: req.StoreText, SkipEmpty: req.SkipEmpty}
	if wo.TTL, wo.ExpireAt, err = Expiry(req.TTLMillis, req.ExpireAt); err != nil {
		return err
	}
	// NB: a client that goes away while the batch waits for the writer
	// lock (an interrupted command) does not have it applied after it left.
	res, err := h.d.PutBatchContext(r.Context(), docs, &wo)
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, BatchResultOut(res))
}

// putBody is the body of a put as the handler decodes it: a PutRequest
// whose docs are decoded one at a time, up to Options.MaxBatch.
//
// NB: the list is a value, not a pointer: after "docs": null set a
// pointer to nil, a second "docs" key got a new one without the bound.
type putBody struct {
	PutRequest
	Docs boundedList[DocJSON] `json:"docs"`
}

// boundedList decodes a JSON list of Ts (a put's documents, a
// query/many's queries), refusing with ErrBatchTooLarge one longer than
// max (none when max ≤ 0) before decoding more, so that a body of many
// small items is not decoded whole (0.4 GB for 800,000 documents, 1.5 GB
// for 6.7 million empty queries) before its count is refused. items
// stays nil for a null (or absent) list; field names the list and noun
// its items in errors, and tooMany says what to do instead.
type boundedList[T any] struct {
	max                  int
	field, noun, tooMany string
	items                []T
}

func (b *boundedList[T]) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		b.items = nil // null
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return badRequest("%s is not a list of %s", b.field, b.noun)
	}
	b.items = []T{}
	for dec.More() {
		if b.max > 0 && len(b.items) == b.max {
			return fmt.Errorf("%w: more than %d %s in one request (lshdb serve --max-batch): %s", ErrBatchTooLarge, b.max, b.noun, b.tooMany)
		}
		var item T
		if err := dec.Decode(&item); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return badRequest("%s[%d]: JSON field %q: %s where %s is expected", b.field, len(b.items), jsonField(te.Field), te.Value, jsonKind(te.Type))
			}
			return badRequest("%s[%d]: %v", b.field, len(b.items), err)
		}
		b.items = append(b.items, item)
	}
	return nil
}

// queryManyBody is the body of a query/many as the handler decodes it:
// a QueryManyRequest whose queries are decoded one at a time, up to
// Options.MaxBatch (a value, as putBody's list).
type queryManyBody struct {
	QueryManyRequest
	Queries boundedList[QueryRequest] `json:"queries"`
}

func (h *handler) putIfNew(w *resp, r *http.Request) error {
	q, err := params(r, []string{"no_sync", "store_text", "ttl_ms", "expire_at"})
	if err != nil {
		return err
	}
	var wo db.WriteOptions
	if wo.TTL, wo.ExpireAt, err = expiryParams(q); err != nil {
		return err
	}
	if wo.NoSync, err = boolParam(q, "no_sync"); err != nil {
		return err
	}
	if wo.StoreText, err = boolParam(q, "store_text"); err != nil {
		return err
	}
	estimateOnly := h.d.Params().Storage == db.StorageNone
	// NB: answers go out while the body is still read; an HTTP/1.1
	// server closes the body at the first flush unless told otherwise
	// (the in-process tests with a recorder cannot see this: the README's
	// curl test does).
	_ = w.rc.EnableFullDuplex()
	atEOF := false
	defer func() {
		if !atEOF {
			endBody(w, r)
		}
	}()
	// NB: a corpus's other fields (url, title; lshdb gen's of and
	// edit_rate) are ignored, as lshdb dedup and insert ignore them.
	lines := h.bodyLines(w, r)
	ctx := r.Context()
	// NB: documents go to PutIfNewBatch in groups: one sync for a
	// group, where a document at a time was one sync each. A body of a
	// known length (a client's batch, curl --data-binary @file) is sent
	// whole: its groups are read whole. A stream of unknown length
	// (chunked: a pipe, a person typing) is answered as its documents
	// come: a group is only what is already read.
	sized := r.ContentLength > 0
	type item struct {
		id  string
		doc db.Doc
		err error // the line's own: not a document
	}
	var group []item
	var docs []db.Doc
	for n := 0; ; {
		group, docs = group[:0], docs[:0]
		// NB: a group is bounded by the bytes of the body it was read
		// from, whatever its documents hold (a text, tokens, hashes):
		// they are all held, and prepared, at once.
		from := lines.read
		var readErr error
		for len(group) == 0 || len(group) < maxIfNewGroup && lines.read-from < maxIfNewGroupBytes && (sized || lines.lineBuffered()) {
			var dl docLine
			if readErr = lines.next(&dl); readErr != nil {
				break
			}
			dj := DocJSON(dl)
			it := item{id: dj.ID}
			if it.doc, it.err = dj.Doc(); it.err == nil {
				docs = append(docs, it.doc)
			}
			group = append(group, it)
		}
		if len(group) > 0 && !w.started {
			w.startStream()
		}
		var res []db.IfNewResult
		var err error
		if len(docs) > 0 {
			var release func()
			var size int64
			for i := range docs {
				size += docBytes(docs[i].Text, nil, 0)
			}
			if release, err = h.admit(ctx, len(docs), size); err == nil {
				res, err = h.d.PutIfNewBatch(ctx, docs, &wo)
				release()
			}
		}
		// NB: every result has its line, those before an error of the
		// index included: a document stored is never left unanswered.
		for _, it := range group {
			out := PutIfNewJSON{ID: it.id}
			docErr := it.err
			if docErr == nil {
				if len(res) == 0 {
					break
				}
				r := res[0]
				res = res[1:]
				docErr = r.Err
				if m := r.Match; m != nil {
					// NB: an index that stores no set verifies nothing:
					// its match has the estimate alone, and jaccard null,
					// as a query's (it said 0 for an identical copy: a
					// review of the API from a client's side, AC10).
					mj := MatchOut(*m, estimateOnly)
					e, b := Similarity(m.Estimate), m.Bands
					out.DuplicateOf, out.Jaccard, out.Estimate, out.Bands = &m.ID, mj.Jaccard, &e, &b
					out.Meta, out.MetaBase64 = mj.Meta, mj.MetaBase64
				}
				out.Replaced, out.Unchanged = r.Replaced, r.Unchanged
			}
			if docErr != nil {
				b := errorBody(docErr, codeOf(docErr))
				out.Error = &b
			}
			n++
			if err := w.line(out, false); err != nil {
				return err
			}
		}
		if err != nil {
			w.failLine(err)
			return err
		}
		atEOF = readErr == io.EOF
		switch {
		case readErr == io.EOF && n > 0:
			return w.flush()
		case readErr != nil:
			readErr = bodyError(readErr)
			if errors.Is(readErr, ErrBadRequest) || errors.Is(readErr, ErrBodyTooLarge) {
				// NB: which document, and what became of the rest: the
				// byte offset alone, into the whole body, named neither
				// (an operator's review, S4); a line over the bound too
				// (an API client's review, A-6).
				readErr = fmt.Errorf("%w (document %d of the body, after %d answered; nothing after it was read)", readErr, n+1, n)
			}
			if !w.started {
				return readErr
			}
			w.failLine(readErr)
			return readErr
		}
		if err := w.flush(); err != nil {
			return err
		}
	}
}

// endBody ends a full-duplex request whose handler returns before the end
// of its body (a bad line, a line over the limit, a failed write): what
// the client sends of the rest within endBodyWait is read and dropped
// (up to 256 KiB), and unless that reached the body's end, the
// connection is closed after the answer. NB: left to net/http, the rest
// was read after the answer, and the background read net/http starts at
// the body's end ran beside its read of the connection's next request,
// which panicked ("invalid concurrent Body.Read call", golang/go#68560:
// logged with its stack, the connection reset). Read here without a
// bound, a streaming client that waits for its answer before it sends
// more got no end to it (nor any answer, when its first line was bad);
// closed at once, a client that sent its whole body met a connection
// reset or, keeping the connection for its next request, an EOF.
func endBody(w *resp, r *http.Request) {
	_ = w.rc.SetReadDeadline(time.Now().Add(endBodyWait))
	if err := r.Body.Close(); err != nil {
		// NB: MaxBytesReader tells the server to close the connection
		// after the answer when its limit is passed (it is, by a reader
		// of one byte against a limit of 0): the one way to say so once
		// the answer's header is out.
		_, _ = http.MaxBytesReader(w.w, io.NopCloser(oneByte{}), 0).Read(make([]byte, 1))
	}
	_ = w.rc.SetReadDeadline(time.Time{})
}

// endBodyWait bounds the wait for the rest of a body endBody reads.
const endBodyWait = time.Second

// oneByte reads one byte at a time, without end.
type oneByte struct{}

func (oneByte) Read(p []byte) (int, error) { return copy(p, "x"), nil }

// maxIfNewGroup and maxIfNewGroupBytes bound the documents of a
// put-if-new stream checked together (one PutIfNewBatch): as many as
// lshdb insert's batches.
const (
	maxIfNewGroup      = 1000
	maxIfNewGroupBytes = DefaultMaxBodyBytes / 2
)

// bodyLines reads a JSON Lines body one value at a time: each value gets
// its own read deadline (Options.ReadTimeout) and, for a body bounded per
// line (docLimit), its own byte budget. Fields it does not know are
// ignored: a JSON Lines body is a corpus's records (or a pairs file), as
// the command reads them.
type bodyLines struct {
	h   *handler
	w   *resp
	dec *json.Decoder
	lim *docLimit
	// read counts the body's bytes read so far (the decoder reads ahead
	// of the value it decodes)
	read int64
}

func (h *handler) bodyLines(w *resp, r *http.Request) *bodyLines {
	lim, _ := r.Body.(*docLimit)
	b := &bodyLines{h: h, w: w, lim: lim}
	b.dec = json.NewDecoder(countingReader{r.Body, &b.read})
	return b
}

// countingReader adds the bytes read from r to *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := transportReader{c.r}.Read(p)
	*c.n += int64(n)
	return n, err
}

// transportReader marks the errors of reading a request's body (other
// than its end) as the transport's (a transportError), so that bodyError
// tells a connection that ended inside the body from a body that ends
// inside its JSON: encoding/json returns io.ErrUnexpectedEOF for both.
type transportReader struct{ r io.Reader }

func (t transportReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		err = transportError{err}
	}
	return n, err
}

// transportError is an error of reading a body (see transportReader).
type transportError struct{ err error }

func (e transportError) Error() string { return e.err.Error() }
func (e transportError) Unwrap() error { return e.err }

// lineBuffered says whether a whole line with a value is already read
// (so that decoding it does not wait for the client).
func (b *bodyLines) lineBuffered() bool {
	r, ok := b.dec.Buffered().(io.ByteReader)
	if !ok {
		return false
	}
	value := false
	for {
		c, err := r.ReadByte()
		switch {
		case err != nil:
			return false
		case c == '\n':
			if value {
				return true
			}
		case c != ' ' && c != '\t' && c != '\r':
			value = true
		}
	}
}

// next decodes the next value into v (io.EOF at the end of the body).
func (b *bodyLines) next(v any) error {
	if r := b.w.r; r != nil && r.Context().Err() != nil {
		// NB: not another deadline for a request that was cut (the
		// server ends its read at the cut): the next read set one a
		// minute on, and the stalled read outlasted the server's wait
		// for its answer.
		return context.Cause(r.Context())
	}
	if b.h.o.ReadTimeout > 0 {
		_ = b.w.rc.SetReadDeadline(time.Now().Add(b.h.o.ReadTimeout))
	}
	if b.lim != nil {
		b.lim.read = 0
	}
	return b.dec.Decode(v)
}

// The forms of max_deleted: a count, a percentage (openapi.yaml's
// pattern).
var (
	maxDeletedCount   = regexp.MustCompile(`^[1-9][0-9]*$`)
	maxDeletedPercent = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?%$`)
)

// defaultMaxDeleted is the share of the stored documents that a load
// with delete_absent and no max_deleted may delete, as lshdb build
// --delete-missing's --max-delete.
const defaultMaxDeleted = 50.0

// maxDeleted reads a load's max_deleted into lo: a count (MaxDeleted), a
// percentage of the stored documents (P%: MaxDeletedPercent, counted by
// Load under its writer lock), or all (no limit); absent,
// defaultMaxDeleted percent. limited: not all.
//
// NB: absent, it was no limit: a body cut short, or empty, deleted most
// or all of the index, where lshdb build --delete-missing refuses past
// 50% (a review of the API from a client's side, AC11); and 0, which a
// client may send to mean "delete nothing", meant no limit.
func maxDeleted(q url.Values, lo *db.LoadOptions) (limited bool, err error) {
	s := q.Get("max_deleted")
	bad := func() error {
		return badRequest("max_deleted %q: a count (1000), a percentage of the stored documents (10%%), or all; leave delete_absent out to delete nothing", s)
	}
	switch {
	case s == "all":
		return false, nil
	case s == "" && q.Has("max_deleted"):
		return false, bad()
	case s == "":
		lo.MaxDeletedPercent = defaultMaxDeleted
		return true, nil
	case strings.HasSuffix(s, "%"):
		// NB: the forms openapi.yaml's pattern gives, no other that
		// ParseFloat or Atoi takes ("1e1%", "+5", "05": a read-through,
		// R11).
		if !maxDeletedPercent.MatchString(s) {
			return false, bad()
		}
		p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return false, bad()
		}
		lo.MaxDeletedPercent = p
		return true, nil
	}
	if !maxDeletedCount.MatchString(s) {
		return false, bad()
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return false, bad()
	}
	lo.MaxDeleted = n
	return true, nil
}

// load streams JSON Lines of documents into db.Load: one atomic load,
// answered with one LoadResultJSON when the body ends. A malformed line,
// a body cut short or a client that goes away fails the whole load, with
// nothing stored.
func (h *handler) load(w *resp, r *http.Request) error {
	q, err := params(r, []string{"memory", "skip_empty", "ttl_ms", "expire_at", "delete_absent", "max_deleted", "min_stored"})
	if err != nil {
		return err
	}
	var lo db.LoadOptions
	if lo.TTL, lo.ExpireAt, err = expiryParams(q); err != nil {
		return err
	}
	if lo.SkipEmpty, err = boolParam(q, "skip_empty"); err != nil {
		return err
	}
	if lo.Memory, err = intParam(q, "memory", 0); err != nil {
		return err
	}
	if lo.DeleteAbsent, err = boolParam(q, "delete_absent"); err != nil {
		return err
	}
	limited := false // max_deleted is not all: an empty body is refused
	if lo.DeleteAbsent {
		if limited, err = maxDeleted(q, &lo); err != nil {
			return err
		}
	} else if q.Has("max_deleted") {
		return badRequest("max_deleted without delete_absent (a load deletes nothing without it)")
	}
	if lo.MinStored, err = intParam(q, "min_stored", 0); err != nil {
		return err
	}
	if lo.Memory > MaxPairsMemory {
		// NB: as for pairs: the budget is the server's memory.
		return memoryOverLimit(lo.Memory)
	}
	// NB: a corpus's other fields are ignored, as lshdb build ignores
	// them (a file lshdb gen wrote has of and edit_rate).
	lines := h.bodyLines(w, r)
	var bodyErr error
	docs := func(yield func(db.Doc, error) bool) {
		for n := 0; ; n++ {
			var dl docLine
			err := lines.next(&dl)
			dj := DocJSON(dl)
			if err == io.EOF {
				if n == 0 && limited {
					// NB: as lshdb build --delete-missing: a job whose
					// input came out empty would delete every stored
					// document.
					yield(db.Doc{}, fmt.Errorf("%w: the body held no document, and delete_absent would delete every stored one (max_deleted=all does)", db.ErrTooManyDeletes))
				}
				return
			}
			var doc db.Doc
			if err == nil {
				doc, err = dj.Doc()
			}
			if err != nil {
				bodyErr = bodyError(err)
				yield(db.Doc{}, bodyErr)
				return
			}
			if !yield(doc, nil) {
				return
			}
		}
	}
	res, err := h.d.Load(r.Context(), docs, &lo)
	if err != nil {
		// NB: the body's own error, as the client needs it (a 400 or a
		// 413), not Load's wrapping of it.
		return cmp.Or(bodyErr, err)
	}
	return w.json(http.StatusOK, LoadResultJSON{Stored: res.Stored, Replaced: res.Replaced, Repeated: res.Repeated, Deleted: res.Deleted, SkippedEmpty: nonNil(res.SkippedEmpty)})
}

func (h *handler) deleteQuery(w *resp, r *http.Request) error {
	q, err := params(r, []string{"id", "ignore_missing", "no_sync"}, "id")
	if err != nil {
		return err
	}
	// NB: ids go in the query; a body's (a client used to another API's
	// DELETE with ids in its body) was ignored, and with ignore_missing
	// the call said it deleted 0 (an API client's review, A-5).
	if err := noBody(r); err != nil {
		return fmt.Errorf("%w: DELETE /v1/docs takes its ids in the query (?id=A&id=B), or POST /v1/docs/delete takes them in a body", err)
	}
	if len(q["id"]) == 0 {
		// NB: as openapi.yaml says; a DELETE with no id is a mistake (a
		// misspelt "ids="), not an empty batch as a POSTed list may be.
		return badRequest("id is required (one or more: ?id=A&id=B)")
	}
	req := DeleteRequest{IDs: q["id"]}
	if req.IgnoreMissing, err = boolParam(q, "ignore_missing"); err != nil {
		return err
	}
	if req.NoSync, err = boolParam(q, "no_sync"); err != nil {
		return err
	}
	return h.delete(w, r, req)
}

func (h *handler) deleteBody(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	var req DeleteRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	return h.delete(w, r, req)
}

func (h *handler) delete(w *resp, r *http.Request, req DeleteRequest) error {
	// NB: no ids deletes nothing, as in process (DeleteIDs(nil)) and as
	// an empty query/many answers nothing.
	// NB: admitted among the work in flight, as has's ids: twelve deletes
	// of 500,000 ids at once took a server from 38 MB to 626 MB, the
	// only requests that did not wait their turn (an SRE review's H1).
	release, err := h.admitIDs(r.Context(), req.IDs)
	if err != nil {
		return err
	}
	defer release()
	// NB: as put: a client gone while the batch waits for the writer lock
	// does not have it applied.
	res, err := h.d.DeleteIDsContext(r.Context(), req.IDs, &db.WriteOptions{IgnoreMissing: req.IgnoreMissing, NoSync: req.NoSync})
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, DeleteResultJSON{Deleted: res.Deleted, Missing: nonNil(res.Missing)})
}

func (h *handler) queryGet(w *resp, r *http.Request) error {
	q, err := params(r, []string{"id", "text", "threshold", "limit", "estimate_only", "with_text"})
	if err != nil {
		return err
	}
	var req QueryRequest
	if q.Has("id") {
		id := q.Get("id")
		req.ID = &id
	}
	if q.Has("text") {
		text := q.Get("text")
		if !utf8.ValidString(text) {
			// NB: as in a body (utf8Body): the text's shingles would
			// not be the ones its bytes were meant to give.
			return badRequest("the text parameter is not UTF-8 (percent-encode the text's UTF-8 bytes)")
		}
		req.Text = &text
	}
	if req.Threshold, err = floatParam(q, "threshold"); err != nil {
		return err
	}
	if req.Limit, err = intParam(q, "limit", 0); err != nil {
		return err
	}
	if req.EstimateOnly, err = boolParam(q, "estimate_only"); err != nil {
		return err
	}
	if req.WithText, err = boolParam(q, "with_text"); err != nil {
		return err
	}
	return h.query(w, r, req)
}

func (h *handler) queryPost(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	var req QueryRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	return h.query(w, r, req)
}

// textBytes is what admit counts of a query (docBytes).
func (q *QueryRequest) textBytes() int64 {
	text := ""
	if q.Text != nil {
		text = *q.Text
	}
	return docBytes(text, q.Tokens, len(q.Hashes))
}

// bigQueryBytes is the size of a query's text (or tokens) from which it
// is admitted among the server's work in flight (Options.MaxInFlightBytes).
const bigQueryBytes = 1 << 20

func (h *handler) query(w *resp, r *http.Request, req QueryRequest) error {
	in, err := req.Input()
	if err != nil {
		return err
	}
	qo := &db.QueryOptions{Threshold: req.Threshold, Limit: req.Limit, EstimateOnly: req.EstimateOnly, WithText: req.WithText, MaxMatches: max(h.o.MaxMatches, 0), MaxTextBytes: max(h.o.MaxTextBytes, 0)}
	// NB: a large query text costs memory as a put's does
	// (MaxInFlightBytes); a small one is not queued behind the writes.
	if size := req.textBytes(); size > bigQueryBytes {
		release, err := h.admit(r.Context(), 1, size)
		if err != nil {
			return err
		}
		defer release()
	}
	var res *db.QueryResult
	switch {
	case req.ID != nil:
		res, err = h.d.QueryID(r.Context(), in.ID, qo)
	case req.Text != nil:
		res, err = h.d.Query(r.Context(), in.Text, qo)
	case in.Signature != nil:
		res, err = h.d.QuerySignature(r.Context(), in.Signature, qo)
	default:
		res, err = h.d.QuerySet(r.Context(), in.Set, qo)
	}
	if err != nil {
		return err
	}
	if h.o.Hooks.Query != nil {
		h.o.Hooks.Query("query", res.Candidates)
	}
	return w.json(http.StatusOK, QueryResultOut(res))
}

// queryMany answers POST /v1/query/many: the queries of the body on one
// snapshot (db.QueryMany), one result each, in their order.
func (h *handler) queryMany(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	// NB: the queries are counted as they are decoded, as a put's
	// documents (boundedList): a 20 MB body of empty queries was decoded
	// whole (6.7 million, 1.5 GB) before its count was refused.
	body := queryManyBody{Queries: boundedList[QueryRequest]{max: h.o.MaxBatch, field: "queries", noun: "queries", tooMany: "split them into several requests"}}
	if err := h.decode(w, r, &body); err != nil {
		return err
	}
	req := body.QueryManyRequest
	req.Queries = body.Queries.items
	if req.Queries == nil {
		return badRequest("no queries: give queries, a list of query requests")
	}
	if err := h.batch(len(req.Queries)); err != nil {
		return err
	}
	var size int64
	for i := range req.Queries {
		size += req.Queries[i].textBytes()
	}
	release, err := h.admit(r.Context(), len(req.Queries), size)
	if err != nil {
		return err
	}
	defer release()
	ins := make([]db.QueryInput, len(req.Queries))
	for i, q := range req.Queries {
		if q.Threshold != 0 || q.Limit != 0 || q.EstimateOnly || q.WithText {
			return badRequest("query %d: the options (threshold, limit, estimate_only, with_text) are the request's, not each query's", i)
		}
		var err error
		if ins[i], err = q.Input(); err != nil {
			return &db.QueryError{Index: i, Err: err}
		}
	}
	qo := &db.QueryOptions{Threshold: req.Threshold, Limit: req.Limit, EstimateOnly: req.EstimateOnly, WithText: req.WithText, MaxMatches: max(h.o.MaxMatches, 0), MaxTextBytes: max(h.o.MaxTextBytes, 0)}
	res, err := h.d.QueryMany(r.Context(), ins, qo)
	if err != nil {
		return err
	}
	out := QueryManyJSON{Results: make([]QueryResultJSON, len(res))}
	for i, q := range res {
		out.Results[i] = QueryResultOut(q)
		if h.o.Hooks.Query != nil {
			h.o.Hooks.Query("query_many", q.Candidates)
		}
	}
	return w.json(http.StatusOK, out)
}

// memoryOverLimit refuses a memory budget over MaxPairsMemory, in bytes
// (the parameter's unit) and MiB (the command's --memory).
func memoryOverLimit(mem int) error {
	return fmt.Errorf("%w: memory %d bytes (%d MiB) exceeds the server's limit of %d bytes (%d MiB)",
		db.ErrInvalidOptions, mem, mem>>20, MaxPairsMemory, MaxPairsMemory>>20)
}

// runOptions is pairsOptions for a run over the whole index, once the
// run has its place among the server's (admitRun), and the function that
// gives the place back.
func (h *handler) runOptions(r *http.Request, q url.Values) (*db.PairsOptions, func(), error) {
	po, err := pairsOptions(q)
	if err != nil {
		return nil, nil, err
	}
	release, err := h.admitRun(r.Context())
	return po, release, err
}

func pairsOptions(q url.Values) (*db.PairsOptions, error) {
	t, err := floatParam(q, "threshold")
	if err != nil {
		return nil, err
	}
	mode, keep := db.ClusterMode(q.Get("mode")), db.KeepPolicy(q.Get("keep"))
	mem, err := intParam(q, "memory", 0)
	if err != nil {
		return nil, err
	}
	if mem > 0 && mem < MinPairsMemory {
		// NB: a budget of a byte spilled 33,707 files, 1.1 GB, into the
		// index's directory in 16 s (a security review, SEC-4).
		mem = MinPairsMemory
	}
	if mem > MaxPairsMemory {
		// NB: the budget is the server's memory, which a client should not
		// be able to claim in full.
		return nil, memoryOverLimit(mem)
	}
	limit, err := intParam(q, "limit", 0)
	if err != nil {
		return nil, err
	}
	if limit > MaxPairsLimit {
		return nil, fmt.Errorf("%w: limit %d exceeds the server's %d (the server holds the pairs it keeps)", db.ErrInvalidOptions, limit, MaxPairsLimit)
	}
	return &db.PairsOptions{Threshold: t, Memory: mem, Mode: mode, Keep: keep, Limit: limit}, nil
}

// clusterChoice is the mode and keep policy of po, with their defaults.
func clusterChoice(po *db.PairsOptions) (db.ClusterMode, db.KeepPolicy) {
	mode, keep := db.Components, db.KeepFirst
	if po.Mode != "" {
		mode = po.Mode
	}
	if po.Keep != "" {
		keep = po.Keep
	}
	return mode, keep
}

// MinPairsMemory is the least sort budget a pairs or clusters request
// runs with: a smaller memory parameter is raised to it (1 MiB, the
// command's least --memory).
const MinPairsMemory = 1 << 20

// MaxPairsMemory is the largest sort budget (the memory parameter) a
// pairs, clusters or load request may ask for: 1 GiB.
const MaxPairsMemory = 1 << 30

// MaxPairsLimit is the largest limit a pairs request may ask for: the
// server holds that many pairs until the run ends (a larger one: take
// every pair and keep the best in the client).
const MaxPairsLimit = 1_000_000

// streamLines is how many lines of pairs or clusters are sent at a time.
const streamLines = 1000

func (h *handler) pairs(w *resp, r *http.Request) error {
	return streamPairs(h, w, r, []string{"threshold", "memory", "limit"}, h.d.Pairs, func(p db.Pair, rec *float64, estimates bool) any {
		return PairJSON{A: p.A, B: p.B, Jaccard: Similarity(p.Jaccard), ExpectedRecall: SimilarityOf(rec), EstimateOnly: estimates}
	})
}

// pairGroups answers GET /v1/pairs/groups: the pairs of GET /v1/pairs
// with those of identical documents as groups (db.DB.PairGroups), as
// JSON Lines of PairGroupJSON, then the end line with the run's stats.
func (h *handler) pairGroups(w *resp, r *http.Request) error {
	return streamPairs(h, w, r, []string{"threshold", "memory"}, h.d.PairGroups, func(g db.PairGroup, rec *float64, estimates bool) any {
		return PairGroupJSON{A: g.A, B: g.B, Jaccard: Similarity(g.Jaccard), Pairs: g.Pairs(), ExpectedRecall: SimilarityOf(rec), EstimateOnly: estimates}
	})
}

// streamPairs answers a pairs request (the query parameters allowed) as a
// spooled stream of run's values, each the line that line makes of it
// (with the expected recall at the threshold, and whether the index
// gives estimates only), then the end line with the run's stats.
//
// NB: spooled, its place among MaxRuns given back once its pairs are
// made: two clients reading slowly held both places for the whole send,
// and a stats request waited 27 s behind them (a review of serve,
// SV3-1).
func streamPairs[T any](h *handler, w *resp, r *http.Request, allowed []string, run func(context.Context, *db.PairsOptions) iter.Seq2[T, error], line func(v T, rec *float64, estimates bool) any) error {
	q, err := params(r, allowed)
	if err != nil {
		return err
	}
	po, release, err := h.runOptions(r, q)
	if err != nil {
		return err
	}
	defer release()
	var st db.PairsStats
	po.Stats = &st
	rec := h.recallNote(po.Threshold)
	estimates := h.d.Params().Storage == db.StorageNone
	return spooledStream(w, r.Context(), func(ctx context.Context) iter.Seq2[T, error] { return run(ctx, po) },
		func(v T) any { return line(v, rec, estimates) },
		func(n int) any { return EndJSON{EndBody{Lines: n, Stats: PairsStatsOut(st)}} }, h.spoolOpts(), release)
}

// spoolOpts are the options of a spooled stream's spool: its file in
// the index's directory (the system's temporary directory for a Redis
// index), within the server's budget and the disk reserve.
func (h *handler) spoolOpts() spoolOpts {
	o := spoolOpts{budget: h.spoolBudget, room: h.spoolRoom}
	if dir := h.d.Dir(); !db.IsRedisURL(dir) {
		o.dir = dir
	}
	return o
}

// scan answers GET /v1/scan: every stored document in insertion order
// (JSON Lines of DocumentJSON, then an end line), with their shingle sets
// and signatures when sets=true.
func (h *handler) scan(w *resp, r *http.Request) error {
	q, err := params(r, []string{"sets"})
	if err != nil {
		return err
	}
	sets, err := boolParam(q, "sets")
	if err != nil {
		return err
	}
	release, err := h.admitScan(r.Context())
	if err != nil {
		return err
	}
	defer release()
	// NB: read ahead into a spool, so that a slow client holds no snapshot
	// (see spool); its place among MaxScans is given back once read. A
	// Redis index's scan holds no snapshot, but its place, as long.
	scan := func(ctx context.Context) iter.Seq2[*db.StoredDoc, error] {
		return h.d.Scan(ctx, &db.ScanOptions{Sets: sets})
	}
	return spooledStream(w, r.Context(), scan, func(d *db.StoredDoc) any { return DocumentOut(d) },
		func(n int) any { return EndJSON{EndBody{Lines: n}} }, h.spoolOpts(), release)
}

func (h *handler) clusters(w *resp, r *http.Request) error {
	q, err := params(r, []string{"threshold", "memory", "mode", "keep"})
	if err != nil {
		return err
	}
	po, release, err := h.runOptions(r, q)
	if err != nil {
		return err
	}
	defer release()
	cs, err := h.d.Clusters(r.Context(), po)
	if err != nil {
		return err
	}
	return h.sendClusters(w, po, cs)
}

func (h *handler) sendClusters(w *resp, po *db.PairsOptions, cs []db.Cluster) error {
	rec := h.recallNote(po.Threshold)
	mode, keep := clusterChoice(po)
	w.startStream()
	for i, c := range cs {
		line := ClusterOut(i+1, c, mode, keep, rec)
		line.EstimateOnly = h.d.Params().Storage == db.StorageNone
		if err := w.line(line, (i+1)%streamLines == 0); err != nil {
			return err
		}
	}
	return w.line(EndJSON{EndBody{Lines: len(cs)}}, true)
}

func (h *handler) info(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	in, err := h.d.Info()
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, InfoOut(in))
}

// clustersFrom answers POST /v1/clusters: the clusters of the pairs in
// the body (JSON Lines of PairJSON, as GET /v1/pairs sends them; an end
// line, if any, is skipped), as db.ClustersFrom makes them.
func (h *handler) clustersFrom(w *resp, r *http.Request) error {
	q, err := params(r, []string{"threshold", "mode", "keep"})
	if err != nil {
		return err
	}
	po, release, err := h.runOptions(r, q)
	if err != nil {
		return err
	}
	defer release()
	lines := h.bodyLines(w, r)
	seq := func(yield func(db.Pair, error) bool) {
		// NB: a line that is no pair (a failed stream's error line, a
		// line with no a or b) was taken as the pair ("", "") and refused
		// for naming one document twice; a header line too, and pairs
		// after an end line (two streams concatenated) went through.
		ended := false
		for n := 1; ; n++ {
			var line struct {
				PairJSON
				// NB: shadows PairJSON's, to tell a missing or null
				// jaccard from 0: such a pair (a misspelt "jacard") was
				// taken at 0, below every threshold, and the answer was
				// 200 with no clusters, where lshdb clusters --from
				// refuses the line (a review of the API).
				Jaccard *float64        `json:"jaccard"`
				Header  json.RawMessage `json:"header"`
				End     *EndBody        `json:"end"`
				Error   json.RawMessage `json:"error"`
			}
			err := lines.next(&line)
			if err == io.EOF {
				return
			}
			var bad error
			switch {
			case err != nil:
				bad = bodyError(err)
			case given(line.Error):
				bad = badRequest("value %d: the error line of a pairs stream that failed (%s): its pairs are not all there; make them again", n, line.Error)
			case line.End != nil:
				ended = true
				continue
			case given(line.Header) && line.A == "" && line.B == "":
				continue
			case ended:
				bad = badRequest("value %d: a pair after the stream's end line (two streams one after the other?)", n)
			case line.A == "" || line.B == "":
				bad = badRequest("value %d: a pair needs both ids (\"a\" and \"b\")", n)
			case line.Jaccard == nil:
				bad = badRequest("value %d: a pair needs its \"jaccard\"", n)
			case !(*line.Jaccard >= 0 && *line.Jaccard <= 1):
				bad = badRequest("value %d: jaccard %v is outside [0, 1]", n, *line.Jaccard)
			}
			if bad != nil {
				yield(db.Pair{}, bad)
				return
			}
			if !yield(db.Pair{A: line.A, B: line.B, Jaccard: *line.Jaccard}, nil) {
				return
			}
		}
	}
	cs, err := h.d.ClustersFrom(r.Context(), seq, po)
	if err != nil {
		return err
	}
	return h.sendClusters(w, po, cs)
}

// given reports whether a JSON field was given a value: not absent, not
// null (a serializer that writes every field gives "error": null).
func given(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// MaxTop bounds the hottest lists a stats or buckets request with the
// read token (Options.ReadToken) asks for (top): each is held with a
// sample of its members, for every band. NB: one request with
// top=1000000000, with the read token, held every posting list of a
// 126,000-document index: 1.7 GB, a 68 MB answer (a security review,
// SEC2-1). A request with the server's own token, which may write and
// maintain the index, is not bounded: the owner's lshdb buckets --top
// 2000, attached to its server, was refused (a read-through, RT11-2).
const MaxTop = 1000

// topParam is the top of a stats or buckets request, at most MaxTop with
// the read token.
func topParam(w *resp, q url.Values, def int) (int, error) {
	top, err := intParam(q, "top", def)
	if err == nil && w.readOnly && top > MaxTop {
		err = fmt.Errorf("%w: top %d is more than the server gives to its read-only token (%d, httpapi.MaxTop): ask for fewer", db.ErrInvalidOptions, top, MaxTop)
	}
	return top, err
}

func (h *handler) stats(w *resp, r *http.Request) error {
	q, err := params(r, []string{"top"})
	if err != nil {
		return err
	}
	top, err := topParam(w, q, 5)
	if err != nil {
		return err
	}
	// NB: a read of the whole index, as pairs is: it waits for a run's
	// place (Options.MaxRuns); six checks at once took 21 s each, and
	// stats and buckets their memory each (SEC2-1).
	release, err := h.admitRun(r.Context())
	if err != nil {
		return err
	}
	defer release()
	st, err := h.d.Stats(r.Context(), top)
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, StatsOut(st))
}

func (h *handler) buckets(w *resp, r *http.Request) error {
	q, err := params(r, []string{"band", "top"})
	if err != nil {
		return err
	}
	band, err := intParam(q, "band", -1)
	if err != nil {
		return err
	}
	top, err := topParam(w, q, 10)
	if err != nil {
		return err
	}
	if b := h.d.Params().Bands.B; band >= b {
		// NB: as db.Buckets says it, before the wait for a run's place:
		// a request cut by the shutdown as it waited was answered 503
		// shutdown, which a client retries, for a band the index has not.
		return fmt.Errorf("%w: band %d: the index has bands 0 to %d", db.ErrInvalidOptions, band, b-1)
	}
	release, err := h.admitRun(r.Context()) // NB: see stats
	if err != nil {
		return err
	}
	defer release()
	st, err := h.d.Buckets(r.Context(), band, top)
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, BucketStatsOut(st, band))
}

func (h *handler) bucket(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	rest := strings.TrimPrefix(r.URL.Path, "/v1/buckets/")
	bandS, bucketS, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(bucketS, "/") {
		return fmt.Errorf("%w: %s (want /v1/buckets/BAND/BUCKET)", ErrNoRoute, clipPath(r.URL.Path))
	}
	band, err := strconv.Atoi(bandS)
	if err != nil {
		return badRequest("band %q is not an integer", bandS)
	}
	bucket, err := ParseBucket(bucketS)
	if err != nil {
		return err
	}
	ids, err := h.d.Bucket(band, bucket)
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, BucketMembersJSON{Band: band, Bucket: BucketHex(bucket), IDs: nonNil(ids)})
}

func (h *handler) explain(w *resp, r *http.Request) error {
	q, err := params(r, []string{"a", "b"})
	if err == nil {
		err = required(q, "a", "b")
	}
	if err != nil {
		return err
	}
	e, err := h.d.Explain(q.Get("a"), q.Get("b"))
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, ExplainOut(e))
}

func (h *handler) check(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	release, err := h.admitRun(r.Context()) // NB: see stats
	if err != nil {
		return err
	}
	defer release()
	rep, err := h.d.Check(r.Context())
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, CheckOut(rep))
}

func (h *handler) repair(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if db.IsRedisURL(h.d.Dir()) {
		// NB: a Redis repair takes a write in flight for one half done
		// and removes what it wrote, and any number of servers may
		// write a Redis index: it runs in-process, with no writer beside
		// it (lshdb check --repair --db redis://…).
		return fmt.Errorf("%w: a repair of a Redis index runs in-process with no writer beside it (lshdb check --db URL --repair), not through a server", db.ErrUnsupported)
	}
	res, err := h.d.Repair(r.Context())
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, RepairOut(res))
}

func (h *handler) tune(w *resp, r *http.Request) error {
	q, err := params(r, []string{"threshold"})
	if err != nil {
		return err
	}
	t, err := floatParam(q, "threshold")
	if err != nil {
		return err
	}
	// NB: given up when the client goes away: a measurement takes 0.2 s
	// of a core (a fuzz campaign, F4; see db.MeasureRecallContext).
	out, err := TuneContext(r.Context(), h.d.Params(), t)
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, out)
}

// Tune is lshdb tune --db for an index of parameters p: its banding's
// P(candidate) at threshold t (0: the index's), the curve's table and the
// recall measured on short documents.
func Tune(p db.Params, t float64) (TuneJSON, error) {
	return TuneContext(context.Background(), p, t)
}

// TuneContext is Tune, given up when ctx ends (db.MeasureRecallContext).
func TuneContext(ctx context.Context, p db.Params, t float64) (TuneJSON, error) {
	if t == 0 {
		t = p.Threshold
	}
	if !(t > 0 && t <= 1) {
		return TuneJSON{}, fmt.Errorf("%w: threshold %v is outside (0, 1]", db.ErrInvalidOptions, t)
	}
	rec, err := db.MeasureRecallContext(ctx, db.Params{Scheme: p.Scheme, NumPerm: p.NumPerm, Bands: p.Bands, Threshold: p.Threshold}, t)
	if err != nil {
		return TuneJSON{}, err
	}
	b := p.Bands
	out := TuneJSON{Bands: b.B, Rows: b.R, Threshold: t, SCurveThreshold: b.Threshold(), PAtThreshold: b.Probability(t),
		Scheme: p.Scheme.String(), FalsePositiveArea: b.FalsePositiveArea(t), FalseNegativeArea: b.FalseNegativeArea(t),
		Table: b.Table(bands.DefaultTableS)}
	if rec.Measured {
		out.PAtThresholdShortDocs = &rec.ShortDocs
	}
	return out, nil
}

func (h *handler) backup(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	var req BackupRequest
	if err := h.decode(w, r, &req); err != nil {
		return err
	}
	if !filepath.IsAbs(req.Dir) {
		return fmt.Errorf("%w: backup directory %q is not an absolute path (it is the server's)", db.ErrInvalidOptions, req.Dir)
	}
	if strings.ContainsFunc(req.Dir, unicode.IsControl) {
		return fmt.Errorf("%w: backup directory %q has a control character", db.ErrInvalidOptions, req.Dir)
	}
	if h.o.BackupRoot == "" && overTCP(r) {
		// NB: a backup writes wherever the server may: a client with the
		// token made directories under /root and /etc. Anywhere is the
		// socket's holder's alone (the owner: the socket is 0600).
		return fmt.Errorf("%w: this server takes backups over TCP only under a backup root, and has none (lshdb serve --backup-root DIR; the owner of an index on disk may back up anywhere through its socket)", db.ErrInvalidOptions)
	}
	dir := filepath.Clean(req.Dir)
	// at is where the backup is made: under a root, the directory's path
	// with its links resolved, once, and every check made on it (below).
	// NB: where the directory really is: a link under the root may lead
	// out of it. And the path checked is the path used: a check of one
	// resolution and a backup at another let a directory swapped for a
	// link meanwhile take the backup out of the root (a read-through's
	// RT2-1).
	at := dir
	if root := h.o.BackupRoot; root != "" {
		at = fspath.Resolve(dir)
		switch rroot := fspath.Resolve(root); {
		case at == rroot:
			// NB: it said the root itself was outside the root.
			return fmt.Errorf("%w: backup directory %s is the server's backup root: give a new directory under it", db.ErrInvalidOptions, dir)
		case !fspath.Under(at, rroot):
			return fmt.Errorf("%w: backup directory %s is outside the server's backup root %s", db.ErrInvalidOptions, dir, root)
		}
	}
	// NB: as lshdb backup: the parent must exist, so that a typo or a
	// volume not mounted is an error; db.Backup makes it, and over HTTP
	// a typo filled the root file system (a review of the API from a
	// client's side, AC6).
	if parent := filepath.Dir(dir); parent != dir {
		if fi, err := os.Stat(parent); err != nil {
			return fmt.Errorf("%w: backup directory %s: its parent %s cannot be used (the server makes no directory but the backup's: create it first): %w", db.ErrInvalidOptions, dir, parent, err)
		} else if !fi.IsDir() {
			return fmt.Errorf("%w: backup directory %s: its parent %s is not a directory", db.ErrInvalidOptions, dir, parent)
		}
	}
	if h.o.BackupRoot != "" {
		// NB: the backup is made where the directory was found to be,
		// by a path with no link, on which no one but this user and root
		// can swap a directory for a link from now on: a local user who
		// could write under the root had the backup's copies (hard
		// links) made outside it that way (a security review's SEC-5).
		if err := fspath.Guarded(filepath.Dir(at)); err != nil {
			return fmt.Errorf("%w: backup directory %s: %v: another user could redirect a backup out of the backup root from there (make the directories from / to the backup's parent belong to the server's user or root, and writable by no one else)", db.ErrInvalidOptions, dir, err)
		}
	}
	if err := h.d.BackupWith(r.Context(), at, db.BackupOptions{Copy: req.Copy, Verify: req.Verify}); err != nil {
		return err
	}
	return w.json(http.StatusOK, BackupRequest{Dir: dir, Copy: req.Copy, Verify: req.Verify})
}

func (h *handler) purge(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	res, err := h.d.Purge(r.Context())
	if err != nil {
		return err
	}
	return w.json(http.StatusOK, PurgeJSON{PurgedLists: res.PurgedLists, SweptExpired: &res.SweptExpired})
}

// PurgeJSON is the answer of POST /v1/purge.
type PurgeJSON struct {
	PurgedLists int `json:"purged_lists"`
	// SweptExpired counts the expired documents swept first; absent from
	// an older server's answer.
	SweptExpired *int `json:"swept_expired,omitempty"`
}

func (h *handler) compact(w *resp, r *http.Request) error {
	if _, err := params(r, nil); err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if err := h.d.Compact(r.Context()); err != nil {
		return err
	}
	return w.json(http.StatusOK, struct {
		Compacted bool `json:"compacted"`
	}{true})
}

// OpenAPI is the API's description (openapi.yaml), which GET
// /v1/openapi.yaml serves.
//
//go:embed openapi.yaml
var OpenAPI []byte

func (h *handler) openapi(w *resp, r *http.Request) error {
	// NB: as every other endpoint: an unknown parameter is refused.
	if _, err := params(r, nil); err != nil {
		return err
	}
	w.header(http.StatusOK, "application/yaml")
	_, err := w.Write(OpenAPI)
	return err
}

// docLimit bounds each document of a stream: read counts the bytes read
// since the reader last reset it, and reading past max fails with
// *http.MaxBytesError (413 body_too_large). It counts what the JSON
// decoder reads ahead too, so a document may be refused up to one read
// buffer (a few KiB) short of max.
type docLimit struct {
	r    io.ReadCloser
	max  int64
	read int64
}

func (l *docLimit) Read(p []byte) (int, error) {
	if l.read >= l.max {
		return 0, &http.MaxBytesError{Limit: l.max}
	}
	if int64(len(p)) > l.max-l.read {
		p = p[:l.max-l.read]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}

func (l *docLimit) Close() error { return l.r.Close() }

// expiryParams returns the TTL and expiry time of the query parameters
// ttl_ms and expire_at, or ErrBadRequest.
func expiryParams(q url.Values) (time.Duration, time.Time, error) {
	ttl := int64(0)
	if v := q.Get("ttl_ms"); v != "" {
		var err error
		if ttl, err = strconv.ParseInt(v, 10, 64); err != nil {
			return 0, time.Time{}, badRequest("ttl_ms %q is not an integer", v)
		}
	}
	return Expiry(ttl, q.Get("expire_at"))
}
