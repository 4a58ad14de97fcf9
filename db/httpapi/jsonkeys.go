package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// The names of a JSON object's fields, as a body's writer meant them.
//
// encoding/json matches a field's name to a struct's without regard to
// case, and of a name given twice keeps the last: {"ids":["a"],
// "IDS":["b"]} deleted b, and {"id":"a","ID":"b",…} stored b, where the
// body's writer (a corpus with an ID column, a client that built the
// object by hand) meant a (an SRE review's H2, a maintainer review's K3).
// A body is checked before it is decoded: no object in it may name a
// field twice, or two fields that differ only in case.

// errKeys is what checkKeys refuses.
type errKeys struct{ first, second string }

func (e *errKeys) Error() string {
	if e.first == e.second {
		return fmt.Sprintf("JSON field %q given twice", e.first)
	}
	return fmt.Sprintf("JSON fields %q and %q differ only in case (names are matched exactly: give one)", e.first, e.second)
}

// errCase is what checkKeys refuses of a name that is not in lower case.
type errCase struct{ name string }

func (e *errCase) Error() string {
	// NB: the name it folds to, in lower case ASCII, when it is one: "ID"
	// is id, a long s is s; "ttl-ms" folds to no name (a read-through,
	// R2: strings.ToLower gave those back unchanged).
	folded := strings.Map(func(r rune) rune {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f >= 'a' && f <= 'z' {
				return f
			}
		}
		return r
	}, e.name)
	if strings.ContainsFunc(folded, notInName) {
		return fmt.Sprintf("json: unknown field %q (names are matched exactly: every field's is in lower case ASCII, a-z, 0-9 and _)", e.name)
	}
	return fmt.Sprintf("json: unknown field %q (names are matched exactly, and every field's is in lower case: %q?)", e.name, folded)
}

// notInName reports whether r is not in any field's name of a request's
// body (lower case ASCII, digits and _).
func notInName(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }

// checkKeys returns an *errKeys for the first object in raw (one JSON
// value, valid) that names a field twice, or two fields that differ only
// in case. It does not decode the values.
func checkKeys(raw []byte) error {
	s := keyScanner{b: raw}
	return s.value(0, func(_ int, keys [][]byte) error {
		if err := sameNames(keys); err != nil {
			return err
		}
		// NB: every field of a request's body is named in lower case
		// ASCII (a-z, 0-9, _): a name with another byte is no field's,
		// which encoding/json took for the field it folds to ("ID" for
		// id, "ſkip_empty" for skip_empty), where a JSON Lines body's
		// line ignores it (a review of the API from a client's side,
		// AC15). It is an unknown field, and refused as one.
		for _, k := range keys {
			if bytes.ContainsFunc(k, notInName) {
				return &errCase{string(k)}
			}
		}
		return nil
	})
}

// sameNames returns an *errKeys for two of keys that are the same name,
// or differ only in case.
func sameNames(keys [][]byte) error {
	// NB: compared two by two, 50,000 keys took 3.5 s, and a body
	// of 65 MiB hours (a review's F1); such an object was then let
	// through unchecked, and one that named "id" 70 times and then
	// "ID" was stored under the last (a fuzz campaign's F2). A
	// large object's names go through a map of their folded forms.
	if len(keys) > maxBodyFields {
		seen := make(map[string][]byte, len(keys))
		for _, k := range keys {
			f := foldKey(k)
			if prev, ok := seen[f]; ok {
				return &errKeys{string(prev), string(k)}
			}
			seen[f] = k
		}
		return nil
	}
	for i := 1; i < len(keys); i++ {
		for j := range i {
			if bytes.EqualFold(keys[i], keys[j]) {
				return &errKeys{string(keys[j]), string(keys[i])}
			}
		}
	}
	return nil
}

// maxBodyFields bounds the objects checkKeys compares names in two by
// two: more than any request's struct has fields. A larger object's are
// compared through a map.
const maxBodyFields = 64

// foldKey returns k with each rune replaced by the least of its case
// folding orbit (unicode.SimpleFold), so that two names are equal under
// bytes.EqualFold exactly when their foldKeys are equal.
func foldKey(k []byte) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range string(k) {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// keyScanner walks a valid JSON value, calling visit with the depth (0
// for the value itself) and the field names of each object (decoded; in
// an object's order; an object's after those of the objects inside it).
// It never reads past its bytes: a value that is not valid JSON ends the
// walk with no error, for the decoder to name.
type keyScanner struct {
	b []byte
	i int
}

func (s *keyScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// str reads a string at s.i and returns its decoded bytes (raw when it
// holds no escape).
func (s *keyScanner) str() ([]byte, bool) {
	start := s.i
	s.i++ // the opening quote
	for {
		// NB: the next quote found with IndexByte, not a byte at a time:
		// a line's text is most of its bytes.
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			s.i = len(s.b)
			return nil, false
		}
		s.i += j
		k := s.i
		for k > start+1 && s.b[k-1] == '\\' {
			k--
		}
		s.i++
		if (s.i-1-k)%2 == 1 {
			continue // an escaped quote
		}
		body := s.b[start+1 : s.i-1]
		if bytes.IndexByte(body, '\\') < 0 {
			return body, true
		}
		var v string
		if json.Unmarshal(s.b[start:s.i], &v) != nil {
			return nil, false
		}
		return []byte(v), true
	}
}

// maxScanDepth is the deepest nesting keyScanner walks into: encoding/json
// refuses a value nested deeper than 10,000 ("exceeded max depth"), which
// no request body comes near.
const maxScanDepth = 10_000

// value walks the value at s.i. Past maxScanDepth it ends the walk with
// no error, for the decoder to refuse the value.
//
// NB: it recursed once per '[' or '{' with no bound: a body of 6 million
// '[' (6 MB, within the default bound on a body) overflowed the
// goroutine's stack, a fatal error that no recover catches, and ended the
// server (a security review).
func (s *keyScanner) value(depth int, visit func(depth int, keys [][]byte) error) error {
	s.ws()
	if s.i >= len(s.b) || depth > maxScanDepth {
		s.i = len(s.b)
		return nil
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		var keys [][]byte
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == '}' {
				s.i++
				break
			}
			if s.b[s.i] != '"' {
				return nil
			}
			k, ok := s.str()
			if !ok {
				return nil
			}
			keys = append(keys, k)
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return nil
			}
			s.i++
			if err := s.value(depth+1, visit); err != nil {
				return err
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
			}
		}
		return visit(depth, keys)
	case '[':
		s.i++
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				s.i++
				return nil
			}
			before := s.i
			if err := s.value(depth+1, visit); err != nil {
				return err
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
			} else if s.i == before {
				return nil // NB: not JSON: no progress
			}
		}
	case '"':
		s.str()
		return nil
	default: // a number, true, false, null
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
		return nil
	}
}

// isDelim reports whether c ends a number, true, false or null.
func isDelim(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// errNotPlain stops a scan of a stream line that needs docLine's own
// decoding.
var errNotPlain = errors.New("not plain")

// plainLine reports whether encoding/json reads the stream line raw (a
// JSON object) as docLine means it: none of its fields names a DocJSON
// field in another case, and none names one twice.
func plainLine(raw []byte) bool {
	// NB: not an object (null, a list): docLine's own decoding names it,
	// where encoding/json took null for an empty document (a review's F2).
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return false
	}
	s := keyScanner{b: raw}
	return s.value(0, func(depth int, keys [][]byte) error {
		if depth > 0 {
			return nil
		}
		var seen [len(docFields)]bool
		for _, k := range keys {
			for i, f := range docFields {
				if !bytes.EqualFold(k, []byte(f)) {
					continue
				}
				if string(k) != f || seen[i] {
					return errNotPlain
				}
				seen[i] = true
			}
		}
		return nil
	}) == nil
}
