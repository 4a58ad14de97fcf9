package docio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// JSON Lines are read in three stages: one goroutine decompresses the
// stream and cuts it into chunks of whole lines (lineReader, so that line
// numbers, over-long lines and stream errors are as for the other
// formats), workers on every core parse the chunks, and the caller's
// goroutine yields the records chunk by chunk in the input's order.
//
// NB: a CPU profile of a bulk build showed the reading, on the caller's
// goroutine, at 30% of the CPU (JSON checking and decoding 17%, gzip
// 11%) while the signatures used every core; BenchmarkRead and the
// commit that added this have the figures.

const (
	// chunkBytes is the line bytes a chunk collects before it is parsed.
	chunkBytes = 256 << 10
	// chunkLines caps the lines of a chunk (short lines).
	chunkLines = 4096
	// hugeLine is the length past which a line goes alone (see run).
	hugeLine = 1 << 20
	// maxWorkers caps the parsing goroutines of one stream: past it,
	// decompression is the bottleneck, and chunks in flight cost memory.
	maxWorkers = 8
)

// jsonChunk is a run of a stream's lines, parsed by a worker.
type jsonChunk struct {
	data  []byte     // the lines' bytes
	lines []jsonLine // in order
	err   error      // after the lines: the stream's end (io.EOF) or failure
	done  chan struct{}
}

// jsonLine is one line of a chunk and, once parsed, its record.
type jsonLine struct {
	start, end int // the line is data[start:end]
	line       int
	n          int  // an over-long line's length
	long       bool // longer than Options.MaxRecordBytes, not read
	blank      bool
	eol        string // the line end after it (Record.End)
	rec        Record
	err        error // a *RecordError
}

// reset empties c for reuse; a chunk that held a huge line lets it go.
func (c *jsonChunk) reset() {
	clear(c.lines) // NB: drop the records' strings
	c.lines, c.err = c.lines[:0], nil
	c.data = c.data[:0]
	if cap(c.data) > 4*chunkBytes {
		c.data = nil
	}
}

// jsonl reads JSON Lines from br and calls closeFn when done with it;
// mayWait says that br's lines are passed on as soon as they are read.
//
// NB: when the caller's loop stops early, the goroutine that reads br is
// not waited for: it may be blocked on a terminal or pipe that nobody
// writes to. It stops at its next line, or when the file is closed.
func (r *reader) jsonl(name string, br *bufio.Reader, closeFn func(), mayWait bool) error {
	workers := max(1, min(runtime.GOMAXPROCS(0), maxWorkers))
	// NB: every chunk is in one of free, the workers' queue, the order
	// queue or the caller's hands, so the sends below never block and
	// memory is bounded by nChunks × (chunkBytes + hugeLine) and one line
	// longer than that.
	nChunks := 2*workers + 2
	free := make(chan *jsonChunk, nChunks)
	for range nChunks {
		free <- &jsonChunk{done: make(chan struct{}, 1)}
	}
	work := make(chan *jsonChunk, nChunks)
	order := make(chan *jsonChunk, nChunks)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { r.parseChunks(name, work, quit) })
	}
	finished := false
	defer func() {
		close(quit) // NB: also when the caller's loop panics
		if !finished {
			r.lines = &lineReader{} // NB: the splitter may still use the old one
		}
	}()
	lr := r.lines
	lr.reset(name, br, r.o.MaxRecordBytes, r.o.LongStops)
	split := &splitter{lr: lr, free: free, work: work, order: order, quit: quit, nChunks: nChunks, mayWait: mayWait}
	wg.Go(func() {
		defer closeFn()
		split.run()
	})
	for c := range order {
		<-c.done
		for i := range c.lines {
			l := &c.lines[i]
			var err error
			switch {
			case l.blank:
				continue
			case l.err != nil:
				if re, ok := l.err.(*RecordError); ok {
					re.End = l.eol
				}
				err = r.emit(Record{}, l.err)
			default:
				l.rec.End = l.eol
				err = r.emit(l.rec, nil)
			}
			if err != nil {
				return err
			}
		}
		if c.err != nil {
			wg.Wait()
			finished = true
			if c.err == io.EOF {
				return nil
			}
			return c.err
		}
		c.reset()
		free <- c
	}
	// NB: unreachable: the splitter ends with a chunk that carries io.EOF
	// or an error unless quit closed, and only this loop closes quit.
	return fmt.Errorf("%s: the JSON Lines reader ended early (a bug)", name)
}

// splitter cuts a stream into chunks of lines.
type splitter struct {
	lr          *lineReader
	free        chan *jsonChunk
	work, order chan *jsonChunk
	quit        chan struct{}
	nChunks     int
	mayWait     bool
	c           *jsonChunk // being filled
}

// run reads lines into chunks until the stream ends or fails (the last
// chunk carries the error) or quit closes.
func (s *splitter) run() {
	defer close(s.order)
	defer close(s.work)
	for {
		if s.c == nil && !s.get() {
			return
		}
		b, n, long, err := s.lr.next()
		c := s.c
		switch {
		case err != nil:
			c.err = err
			s.send()
			return
		case long:
			c.lines = append(c.lines, jsonLine{line: s.lr.line, n: n, long: true})
		case s.lr.joined && len(b) > hugeLine:
			// NB: a huge line waits until every chunk before it is
			// yielded and goes alone in its own buffer (taken from lr),
			// so that at most one is in flight: reading a file of 60 MiB
			// lines takes about the memory it did on one goroutine.
			line := s.lr.line
			if len(c.lines) > 0 {
				s.send()
			} else {
				s.free <- c
				s.c = nil
			}
			if !s.drain() {
				return
			}
			c = s.c
			c.data = b
			s.lr.buf = nil
			c.lines = append(c.lines, jsonLine{start: 0, end: len(b), line: line, eol: s.lr.end})
			s.send()
			continue
		default:
			start := len(c.data)
			c.data = append(c.data, b...)
			c.lines = append(c.lines, jsonLine{start: start, end: len(c.data), line: s.lr.line, eol: s.lr.end})
		}
		if len(c.data) >= chunkBytes || len(c.lines) >= chunkLines || s.mayWait && s.lr.br.Buffered() == 0 {
			s.send()
		}
	}
}

// get takes a free chunk; false when quit closed.
func (s *splitter) get() bool {
	select {
	case s.c = <-s.free:
		return true
	case <-s.quit:
		return false
	}
}

// send queues the chunk being filled for parsing and for the caller.
func (s *splitter) send() {
	s.work <- s.c
	s.order <- s.c
	s.c = nil
}

// drain waits until every chunk is free again and keeps one; false when
// quit closed.
func (s *splitter) drain() bool {
	all := make([]*jsonChunk, 0, s.nChunks)
	for range s.nChunks {
		select {
		case c := <-s.free:
			all = append(all, c)
		case <-s.quit:
			return false
		}
	}
	s.c = all[0]
	for _, c := range all[1:] {
		s.free <- c
	}
	return true
}

// parseChunks parses the chunks of work until it closes or quit does.
func (r *reader) parseChunks(name string, work <-chan *jsonChunk, quit <-chan struct{}) {
	var s lineScan
	for {
		var c *jsonChunk
		var ok bool
		select {
		case c, ok = <-work:
			if !ok {
				return
			}
		case <-quit:
			return
		}
		for i := range c.lines {
			l := &c.lines[i]
			if l.long {
				l.err = badRecord(name, l.line, "", nil, tooLong(l.n, r.o.MaxRecordBytes))
				continue
			}
			b := c.data[l.start:l.end]
			if len(bytes.TrimSpace(b)) == 0 {
				l.blank = true
				continue
			}
			rec, err := parseJSON(&r.o, &s, name, l.line, b)
			if err != nil {
				l.err = badRecord(name, l.line, rec.ID, b, err)
			} else {
				l.rec = rec
			}
		}
		s.release()
		c.done <- struct{}{}
	}
}

// parseJSON parses one JSON Lines record with o's fields, scanning it with
// s. On an error, the result's ID is the id if it was read. It only reads
// o, so that the lines of a chunk are parsed on every core.
//
// NB: the line is checked and its top-level members noted in one pass
// (lineScan), not decoded into a map: the map copied every field and
// scanned the line twice, and json.Valid then a member scan still read it
// three times; BenchmarkRead measured the difference.
func parseJSON(o *Options, s *lineScan, name string, line int, b []byte) (Record, error) {
	rec := Record{File: name, Line: line, Raw: b}
	if !s.scan(b) || !s.object {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t := bytes.TrimSpace(b)
			switch {
			case bytes.HasPrefix(t, utf8BOM):
				// NB: files that each start with a mark, joined with
				// cat: the mark was shown as 'ï', with the CSV hint.
				return Record{}, errors.New("not a JSON object: the line starts with a byte order mark (U+FEFF), as a file joined to others with cat does: remove it (sed 's/^\\xef\\xbb\\xbf//')")
			case looksUTF16(t):
				// NB: what PowerShell's > and Notepad's "Unicode" write:
				// the mark was shown as 'ÿ', with the CSV hint (a
				// multilingual user's U8).
				return Record{}, errors.New("not a JSON object: the file is UTF-16, not UTF-8: convert it first (iconv -f utf-16 -t utf-8 FILE)")
			case len(t) > 0 && t[0] != '{' && t[0] != '[' && bytes.ContainsAny(t, ",\t"):
				// NB: a CSV or TSV line read as JSON Lines (stdin, or a
				// file whose name does not say): say what would read it.
				return Record{}, fmt.Errorf("not a JSON object (CSV or TSV? give --format csv or tsv): %w", err)
			case len(t) > 0 && t[0] == '[':
				return Record{}, errors.New("not a JSON object: the line starts with '[' (a JSON array? JSON Lines holds one object per line: jq -c '.[]' FILE writes them so)")
			case len(t) > 0 && t[0] != '{':
				// NB: encoding/json's message for a line that is no JSON
				// at all ("invalid character 'o' in literal null") says
				// what it tried, not what the line is.
				r, _ := utf8.DecodeRune(t)
				return Record{}, fmt.Errorf("not a JSON object: the line starts with %q, not { (plain text? --format text reads each file as one document)", r)
			case string(t) == "{":
				// NB: the first line of a pretty-printed object (a line
				// cut short says only what it is).
				return Record{}, fmt.Errorf("not a JSON object: %w (an object over several lines? JSON Lines holds one object per line: jq -c . FILE writes them so)", err)
			}
			return Record{}, fmt.Errorf("not a JSON object: %w", err)
		}
		return Record{}, errors.New("not a JSON object: null")
	}
	// NB: a field that repeats (a producer's bug) was read as its last
	// value, as encoding/json and jq read it, without a word: the id or
	// the text of the record then is a guess (a newcomer's review, N8).
	// NB: a dotted path is walked through every copy of each key on it,
	// and a key holding the whole path beside the nested path is refused
	// too (lineScan.ambiguous); the metadata's field as well, which was
	// read as its last value.
	if o.IDFrom == "" {
		if err := s.fieldOnce(o.IDField); err != nil {
			return Record{}, err
		}
	}
	if err := s.fieldOnce(o.TextField); err != nil {
		return Record{}, err
	}
	if o.MetaField != "" {
		if err := s.fieldOnce(o.MetaField); err != nil {
			return Record{}, err
		}
	}
	switch o.IDFrom {
	case "":
		raw, err := lookupIn(s.member, o.IDField)
		if err != nil {
			// NB: as the CSV reader names --id-col and --text-col.
			return Record{}, fmt.Errorf("%w (--id-field names the id's field; --id-from line or hash makes ids)", err)
		}
		if rec.ID, err = idValue(raw, o.IDField); err != nil {
			return Record{}, err
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] != '"' {
			rec.IDNumber = true
		}
	case "line":
		rec.ID = lineID(name, line)
	}
	raw, err := lookupIn(s.member, o.TextField)
	if err != nil {
		return Record{ID: rec.ID}, fmt.Errorf("%w (--text-field names the text's field)", err)
	}
	// NB: the text is scanned for escapes once: for a lone surrogate
	// here, and not again by decodeString when it has none.
	esc, lone := bytes.IndexByte(raw, '\\') >= 0, -1
	if esc {
		lone = loneSurrogate(raw)
	}
	var ok bool
	if !utf8.Valid(raw) {
		// NB: encoding/json (and decodeString) turn each byte that is not
		// UTF-8 into U+FFFD: the texts of a Latin-1 file that differ only
		// in their accents became one text, a pair at Jaccard 1.
		// (Checked under SkipText too: filter took such a record, which
		// the build had refused, for a stored document of its id.)
		return Record{ID: rec.ID}, notUTF8(o.TextField, raw)
	} else if len(raw) < 2 || raw[0] != '"' {
		return Record{ID: rec.ID}, fmt.Errorf("field %q is not a string", o.TextField)
	} else if at := lone; at >= 0 {
		// NB: decoded to U+FFFD, as encoding/json does, and stored so
		// without a word, where the same escape in an id is refused (an
		// input review, IN-3). Under SkipText too, as filter must refuse
		// what the build refused.
		return Record{ID: rec.ID}, fmt.Errorf("field %q has an escape that is not a character (a lone surrogate, %s at offset %d of its string as written): convert the text first, or escape U+FFFD (\\ufffd) if that is what it means", o.TextField, raw[at:at+6], at-1)
	} else if o.SkipText && o.IDFrom != "hash" {
		// NB: checked as a string (the line is valid JSON), not copied.
		rec.textSkipped, rec.Blank = true, blankString(raw, o.BlankFormat)
	} else if !esc {
		rec.Text = string(raw[1 : len(raw)-1]) // NB: the bytes are the string
	} else if rec.Text, s.buf, ok = decodeString(raw, s.buf, true); !ok {
		return Record{ID: rec.ID}, fmt.Errorf("field %q is not a string", o.TextField)
	}
	if o.IDFrom == "hash" {
		rec.ID = hashID(rec.Text)
	}
	if o.MetaField != "" {
		if raw, err := lookupIn(s.member, o.MetaField); err == nil {
			if !utf8.Valid(raw) {
				// NB: stored, and written back by export and get as JSON
				// that is not UTF-8 (an input review, IN-2), as the text
				// and the id are refused.
				return Record{ID: rec.ID}, notUTF8(o.MetaField, raw)
			}
			rec.Meta = bytes.Clone(raw) // NB: b is the reader's buffer
		}
	}
	return rec, nil
}

// blankString reports whether the JSON string raw (as written, with its
// quotes) holds nothing but white space (and with format, format
// characters: Options.BlankFormat): decoded only when it holds an escape
// or a byte past ASCII, which a blank string rarely does.
func blankString(raw []byte, format bool) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == '\\' || c >= utf8.RuneSelf:
			s, _, ok := decodeString(raw, nil, true)
			return ok && isBlank(s, format)
		default:
			return false
		}
	}
	return true
}

// notUTF8 is the error of a field whose raw bytes are not UTF-8: it
// names the first bad byte and its offset in the field.
func notUTF8(field string, raw []byte) error {
	at := firstInvalid(raw)
	if len(raw) > 0 && raw[0] != '"' {
		// NB: a --meta-field's value may be an object or an array.
		return fmt.Errorf("field %q is not valid UTF-8 (byte 0x%02x at offset %d of its value as written): text in another encoding, such as Latin-1? convert the file first (iconv -f latin1 -t utf-8)", field, raw[min(at, len(raw)-1)], at)
	}
	// NB: the offset in the string as written, after its opening quote.
	return fmt.Errorf("field %q is not valid UTF-8 (byte 0x%02x at offset %d of its string as written): text in another encoding, such as Latin-1? convert the file first (iconv -f latin1 -t utf-8)", field, raw[min(at, len(raw)-1)], max(at-1, 0))
}

// lookup finds a field of the JSON object obj by its dotted path: a key
// holding the whole path wins, then each dot steps into a nested object.
func lookup(obj []byte, path string) ([]byte, error) {
	return lookupIn(func(key string) ([]byte, bool) { return member(obj, key) }, path)
}

// lookupIn is lookup with the object's top-level members found by top.
func lookupIn(top func(key string) ([]byte, bool), path string) ([]byte, error) {
	if v, ok := top(path); ok {
		return v, nil
	}
	segs := strings.Split(path, ".")
	var obj []byte
	for i, seg := range segs {
		var v []byte
		var ok bool
		if i == 0 {
			v, ok = top(seg)
		} else {
			v, ok = member(obj, seg)
		}
		if !ok {
			return nil, fmt.Errorf("no %q field", path)
		}
		if i == len(segs)-1 {
			return v, nil
		}
		if v[0] != '{' {
			return nil, fmt.Errorf("no %q field (%q is not an object)", path, strings.Join(segs[:i+1], "."))
		}
		obj = v
	}
	return nil, fmt.Errorf("no %q field", path)
}

// jsonString decodes a JSON string value that lineScan accepted; ok is
// false for another type. NB: without escapes and with valid UTF-8 the
// bytes are the string; else unquote decodes it as encoding/json does
// (invalid UTF-8 becomes U+FFFD).
func jsonString(raw []byte) (s string, ok bool) {
	s, _, ok = decodeString(raw, nil, false)
	return s, ok
}

// decodeString is jsonString with buf as scratch space; it returns buf,
// grown. valid says the caller checked raw is UTF-8 (parseJSON, which
// refuses a text that is not): it is not checked again.
func decodeString(raw, buf []byte, valid bool) (s string, _ []byte, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", buf, false
	}
	if c := raw[1 : len(raw)-1]; bytes.IndexByte(c, '\\') < 0 && (valid || utf8.Valid(c)) {
		return string(c), buf, true
	}
	if buf, ok = appendUnquoted(buf[:0], raw); !ok {
		return "", buf, false
	}
	return string(buf), buf, true
}

// idValue returns a JSON id: a string, checked to be valid UTF-8 in its
// raw bytes, or a number as written.
//
// NB: encoding/json replaces invalid UTF-8 and lone surrogate escapes
// with U+FFFD, so two different ids could become one; both are refused
// instead.
func idValue(raw json.RawMessage, field string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", fmt.Errorf("field %q is empty", field)
	}
	switch c := raw[0]; {
	case c == '"':
		if !utf8.Valid(raw) {
			return "", fmt.Errorf("field %q is not valid UTF-8: %q", field, raw)
		}
		s, ok := unquote(raw)
		if !ok {
			var err error
			if err = json.Unmarshal(raw, &s); err == nil {
				err = errors.New("not a JSON string")
			}
			return "", fmt.Errorf("field %q: %w", field, err)
		}
		if loneSurrogate(raw) >= 0 {
			// NB: the text's test (it had one of its own, which took a
			// U+FFFD the raw bytes did not spell for one).
			return "", fmt.Errorf("field %q has an escape that is not a character (a lone surrogate): %s", field, raw)
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return string(raw), nil // NB: as written: lineScan checked the grammar
	}
	return "", fmt.Errorf("field %q is not a string or a number", field)
}

// lineID is the id Options.IDFrom "line" gives.
func lineID(name string, line int) string { return baseName(name) + ":" + strconv.Itoa(line) }

// hashID is the id Options.IDFrom "hash" gives.
func hashID(text string) string { return fmt.Sprintf("%016x", xxhash.Sum64String(text)) }

// looksUTF16 reports whether a line read as UTF-8 is UTF-16: it starts
// with a UTF-16 byte order mark, or its first character is ASCII with a
// zero byte beside it (the file's later lines, and files without a mark).
func looksUTF16(t []byte) bool {
	switch {
	case bytes.HasPrefix(t, []byte{0xff, 0xfe}), bytes.HasPrefix(t, []byte{0xfe, 0xff}):
		return true
	case len(t) >= 2 && t[0] == 0 && t[1] > 0 && t[1] < utf8.RuneSelf:
		return true // big-endian, or little-endian after a line's \n
	case len(t) >= 2 && t[0] > 0 && t[0] < utf8.RuneSelf && t[1] == 0:
		return true
	case len(t) == 1 && t[0] == 0:
		return true // the zero byte after the last line's \n
	}
	return false
}
