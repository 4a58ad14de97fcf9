package docio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// jsonl reads JSON Lines from r.lines.
func (r *reader) jsonl(name string) error {
	for {
		b, n, long, err := r.lines.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line := r.lines.line
		if long {
			if err := r.emit(Record{}, badRecord(name, line, "", nil, tooLong(n, r.o.MaxRecordBytes))); err != nil {
				return err
			}
			continue
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		rec, perr := r.parseJSON(name, line, b)
		if perr != nil {
			err = r.emit(Record{}, badRecord(name, line, rec.ID, b, perr))
		} else {
			err = r.emit(rec, nil)
		}
		if err != nil {
			return err
		}
	}
}

// parseJSON parses one JSON Lines record. On an error, the result's ID is
// the id if it was read.
//
// NB: the line is checked with json.Valid and its fields found by
// scanning it (member), not decoded into a map: the map copied every
// field and scanned the line twice; BenchmarkRead measured the difference.
func (r *reader) parseJSON(name string, line int, b []byte) (Record, error) {
	rec := Record{File: name, Line: line, Raw: b}
	if start := skipSpace(b, 0); !json.Valid(b) || b[start] != '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return Record{}, fmt.Errorf("not a JSON object: %w", err)
		}
		return Record{}, errors.New("not a JSON object: null")
	}
	switch r.o.IDFrom {
	case "":
		raw, err := lookup(b, r.o.IDField)
		if err != nil {
			return Record{}, err
		}
		if rec.ID, err = idValue(raw, r.o.IDField); err != nil {
			return Record{}, err
		}
	case "line":
		rec.ID = lineID(name, line)
	}
	raw, err := lookup(b, r.o.TextField)
	if err != nil {
		return Record{ID: rec.ID}, err
	}
	var ok bool
	if rec.Text, ok = jsonString(raw); !ok {
		return Record{ID: rec.ID}, fmt.Errorf("field %q is not a string", r.o.TextField)
	}
	if r.o.IDFrom == "hash" {
		rec.ID = hashID(rec.Text)
	}
	if r.o.MetaField != "" {
		if raw, err := lookup(b, r.o.MetaField); err == nil {
			rec.Meta = bytes.Clone(raw) // NB: b is the reader's buffer
		}
	}
	return rec, nil
}

// lookup finds a field of the JSON object obj by its dotted path: a key
// holding the whole path wins, then each dot steps into a nested object.
func lookup(obj []byte, path string) ([]byte, error) {
	if v, ok := member(obj, path); ok {
		return v, nil
	}
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		v, ok := member(obj, seg)
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

// jsonString decodes a JSON string value; ok is false for another type.
// NB: without escapes and with valid UTF-8 the bytes are the string; else
// encoding/json decodes it (invalid UTF-8 becomes U+FFFD).
func jsonString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if c := raw[1 : len(raw)-1]; bytes.IndexByte(c, '\\') < 0 && utf8.Valid(c) {
		return string(c), true
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
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
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("field %q: %w", field, err)
		}
		if strings.ContainsRune(s, utf8.RuneError) && !bytes.ContainsRune(raw, utf8.RuneError) &&
			!bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`)) {
			return "", fmt.Errorf("field %q has an escape that is not a character (a lone surrogate): %s", field, raw)
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return string(raw), nil // NB: as written: json.Unmarshal checked the grammar
	}
	return "", fmt.Errorf("field %q is not a string or a number", field)
}

// lineID is the id Options.IDFrom "line" gives.
func lineID(name string, line int) string { return baseName(name) + ":" + strconv.Itoa(line) }

// hashID is the id Options.IDFrom "hash" gives.
func hashID(text string) string { return fmt.Sprintf("%016x", xxhash.Sum64String(text)) }
