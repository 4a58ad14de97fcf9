package docio

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner below finds the members of a JSON object that json.Valid
// has accepted: it does not check the syntax again, and on valid input it
// never indexes past the end.

// member returns the raw value of the member named key of the object obj,
// the last one when the key repeats (as encoding/json keeps the last).
func member(obj []byte, key string) (val []byte, ok bool) {
	eachMember(obj, func(k, v []byte) bool {
		if keyIs(k, key) {
			val, ok = v, true
		}
		return true
	})
	return val, ok
}

// eachMember calls fn with the raw key (without its quotes) and value of
// each top-level member of the object obj, in order, until fn returns
// false.
func eachMember(obj []byte, fn func(k, v []byte) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return // '}': the end of the object
		}
		kEnd := stringEnd(obj, i)
		k := obj[i+1 : kEnd-1]
		i = skipSpace(obj, kEnd) + 1 // the ':'
		i = skipSpace(obj, i)
		vEnd := valueEnd(obj, i)
		if !fn(k, obj[i:vEnd]) {
			return
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index after the string that opens at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i // a number, true, false or null
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// keyIs reports whether the raw key k (without its quotes) is key.
func keyIs(k []byte, key string) bool {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k) == key
	}
	var s string
	quoted := make([]byte, 0, len(k)+2)
	quoted = append(append(append(quoted, '"'), k...), '"')
	return json.Unmarshal(quoted, &s) == nil && s == key
}

// lineScan checks a line in one pass, accepting exactly what json.Valid
// accepts, and notes the members of its top-level object, so that the
// id and text are found without scanning the line again.
//
// NB: json.Valid runs a state machine with a call per byte; this checks
// strings eight bytes at a time, and strings are most of a document.
// FuzzScanLine holds it to json.Valid.
type lineScan struct {
	b       []byte
	members []span // the top-level object's members, in order
	object  bool   // the top-level value is an object
	buf     []byte // scratch for a string with escapes
}

// span is one member: its raw key (without the quotes) and raw value.
type span struct{ key, val []byte }

// maxDepth is encoding/json's limit on nesting (json.Valid refuses more).
const maxDepth = 10000

// scan reports whether b is one valid JSON value with optional white
// space around it, as json.Valid does.
func (s *lineScan) scan(b []byte) bool {
	clear(s.members) // NB: drop the previous line's slices
	s.b, s.members, s.object = b, s.members[:0], false
	i := skipSpace(b, 0)
	if i < len(b) && b[i] == '{' {
		s.object = true
	}
	i, ok := s.value(i, 0, true)
	return ok && skipSpace(b, i) == len(b)
}

// release drops the slices of the last line scanned.
func (s *lineScan) release() {
	clear(s.members)
	s.b, s.members = nil, s.members[:0]
	if cap(s.buf) > 1<<20 {
		s.buf = nil // NB: a huge text's copy is not kept
	}
}

// member returns the raw value of the top-level member named key, the
// last one when the key repeats (as encoding/json keeps the last).
func (s *lineScan) member(key string) ([]byte, bool) {
	for i := len(s.members) - 1; i >= 0; i-- {
		if keyIs(s.members[i].key, key) {
			return s.members[i].val, true
		}
	}
	return nil, false
}

// fieldOnce returns the error of a record whose field (a dotted path)
// names more than one value (ambiguous), nil when it names at most one.
// NB: a name without a dot is checked by repeats, one pass over the
// members, as before paths were walked: parseJSON runs for every record
// of a build.
func (s *lineScan) fieldOnce(field string) error {
	if strings.IndexByte(field, '.') < 0 {
		if s.repeats(field) {
			return fmt.Errorf("field %q appears more than once in the object: which one is the document's is unclear", field)
		}
		return nil
	}
	switch why := s.ambiguous(field); why {
	case "":
		return nil
	case repeatedKey:
		return fmt.Errorf("field %q appears more than once in the object: which one is the document's is unclear", field)
	default:
		return fmt.Errorf("field %q names more than one value (%s): which one is the document's is unclear", field, why)
	}
}

// repeatedKey is ambiguous's answer for a key repeated in the top-level
// object.
const repeatedKey = "it appears more than once in the object"

// ambiguous returns why the dotted path names more than one value of the
// top-level object, or "" when it names at most one. The path is walked
// through every member of each key on it, not only the last (which
// lookupIn takes, as encoding/json does): a member on the path that
// appears more than once in its object makes it ambiguous, whether or not
// each copy leads to a value, and so does a key holding the whole path
// beside the path into nested objects (lookupIn takes the key).
//
// NB: only the top-level repeat was refused: {"meta":{"url":"a","url":"b"}}
// was read as "b" by --id-field meta.url without a word (an input review,
// IN-1), and {"meta.url":"a","meta":{"url":"b"}} as "a" (IN-5).
func (s *lineScan) ambiguous(path string) string {
	switch {
	case s.repeats(path):
		return repeatedKey
	case !strings.Contains(path, "."):
		return ""
	}
	_, whole := s.member(path)
	seg, rest, _ := strings.Cut(path, ".")
	n := 0
	val, _ := s.member(seg)
	if val != nil {
		n = 1
		if s.repeats(seg) {
			n = 2
		}
	}
	at := seg // the path so far
	for {
		switch {
		case n > 1:
			if at == seg {
				return fmt.Sprintf("%q appears more than once in the object", at)
			}
			return fmt.Sprintf("%q appears more than once in %q", at[strings.LastIndexByte(at, '.')+1:], at[:strings.LastIndexByte(at, '.')])
		case n == 0:
			return ""
		case at == path:
			if whole {
				return fmt.Sprintf("the object has both a key %q and that path into its nested objects; rename one first, with jq for one", path)
			}
			return ""
		case val[0] != '{':
			return ""
		}
		seg, rest, _ = strings.Cut(rest, ".")
		at += "." + seg
		obj := val
		n = 0
		eachMember(obj, func(k, v []byte) bool {
			if keyIs(k, seg) {
				n, val = n+1, v
			}
			return true
		})
	}
}

// repeats reports whether the top-level object has a member named key
// more than once.
func (s *lineScan) repeats(key string) bool {
	n := 0
	for _, m := range s.members {
		if keyIs(m.key, key) {
			n++
		}
	}
	return n > 1
}

// value checks the value at b[i] (nested depth deep) and returns the
// index after it; top says to note an object's members.
func (s *lineScan) value(i, depth int, top bool) (int, bool) {
	b := s.b
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return s.str(i)
	case c == '{':
		return s.obj(i, depth+1, top)
	case c == '[':
		if depth+1 > maxDepth {
			return i, false
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = s.value(i, depth+1, false); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

// obj checks the object at b[i], noting its members when top.
func (s *lineScan) obj(i, depth int, top bool) (int, bool) {
	b := s.b
	if depth > maxDepth {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		kStart := i
		var ok bool
		if i, ok = s.str(i); !ok {
			return i, false
		}
		kEnd := i
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		vStart := skipSpace(b, i+1)
		if i, ok = s.value(vStart, depth, false); !ok {
			return i, false
		}
		if top {
			s.members = append(s.members, span{key: b[kStart+1 : kEnd-1], val: b[vStart:i]})
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// SWAR constants: a byte's low and high bit in each of eight lanes.
const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special has the high bit set in the lane of the first byte of x (in
// memory order) that is a quote, a backslash or a control character, and
// is zero when there is none.
//
// NB: each term is exact up to its lowest set bit (a borrow can only set
// bits above a true match), so the lowest bit of the union is exact.
func special(x uint64) uint64 {
	q := x ^ (lows * '"')
	bs := x ^ (lows * '\\')
	return ((q-lows)&^q | (bs-lows)&^bs | (x-lows*0x20)&^x) & highs
}

// str checks the string that opens at b[i] and returns the index after
// it: no control characters, only JSON's escapes. Invalid UTF-8 is
// accepted, as json.Valid accepts it.
func (s *lineScan) str(i int) (int, bool) {
	b := s.b
	j := i + 1
	for {
		for j+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[j:])); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		if j >= len(b) {
			return j, false
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			if j+1 >= len(b) {
				return j, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return j, false
				}
				j += 6
			default:
				return j, false
			}
		case c < 0x20:
			return j, false
		default:
			j++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number checks the number at b[i]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

// literal checks that b[i:] starts with lit.
func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// unquote decodes a JSON string as encoding/json does: invalid UTF-8 and
// lone surrogate escapes become U+FFFD. The string MUST be one that
// lineScan accepted: its quotes and control characters are not checked
// again. ok is false for a value that is not a string.
func unquote(raw []byte) (s string, ok bool) {
	out, ok := appendUnquoted(nil, raw)
	if !ok {
		return "", false
	}
	return string(out), true
}

// appendUnquoted appends the string raw decodes to (as unquote) to out.
func appendUnquoted(out, raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return out, false
	}
	in := raw[1 : len(raw)-1]
	out = slices.Grow(out, len(in)+utf8.UTFMax)
	for r := 0; r < len(in); {
		// NB: the runs between escapes are copied whole when valid.
		k := bytes.IndexByte(in[r:], '\\')
		if k < 0 {
			k = len(in) - r
		}
		if run := in[r : r+k]; utf8.Valid(run) {
			out = append(out, run...)
		} else {
			for len(run) > 0 {
				rr, size := utf8.DecodeRune(run)
				out = utf8.AppendRune(out, rr) // NB: RuneError for a bad byte
				run = run[size:]
			}
		}
		r += k
		if r == len(in) {
			break
		}
		if r+1 >= len(in) {
			return out, false
		}
		switch c := in[r+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			rr := getu4(in[r:])
			if rr < 0 {
				return out, false
			}
			r += 6
			if utf16.IsSurrogate(rr) {
				if dec := utf16.DecodeRune(rr, getu4(in[r:])); dec != utf8.RuneError {
					out = utf8.AppendRune(out, dec)
					r += 6
					continue
				}
				rr = utf8.RuneError
			}
			out = utf8.AppendRune(out, rr)
			continue
		default:
			return out, false
		}
		r += 2
	}
	return out, true
}

// loneSurrogate returns the offset in the JSON string raw (as written)
// of its first \uXXXX escape of a UTF-16 surrogate that is not half of a
// pair, which encoding/json and unquote decode to U+FFFD; -1 if it has
// none.
func loneSurrogate(raw []byte) int {
	for i := 0; ; {
		k := bytes.IndexByte(raw[i:], '\\')
		if k < 0 {
			return -1
		}
		i += k
		if i+1 >= len(raw) || raw[i+1] != 'u' {
			i += 2 // NB: \\ and the others: the next byte is not an escape's start
			continue
		}
		r := getu4(raw[i:])
		switch {
		case r < 0:
			i += 2
		case !utf16.IsSurrogate(r):
			i += 6
		case utf16.DecodeRune(r, getu4(raw[i+6:])) != utf8.RuneError:
			i += 12
		default:
			return i
		}
	}
}

// getu4 decodes \uXXXX at the start of b, or returns -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
