package docio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// mapLookup is the oracle: the lookup Read used to do, decoding the object
// into maps with encoding/json.
func mapLookup(line []byte, path string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	if v, ok := m[path]; ok {
		return v, nil
	}
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		v, ok := m[seg]
		if !ok {
			return nil, fmt.Errorf("no %q field", path)
		}
		if i == len(segs)-1 {
			return v, nil
		}
		m = nil
		if err := json.Unmarshal(v, &m); err != nil || m == nil {
			return nil, fmt.Errorf("no %q field (%q is not an object)", path, strings.Join(segs[:i+1], "."))
		}
	}
	return nil, fmt.Errorf("no %q field", path)
}

// randomValue writes a random JSON value: strings with quotes, braces,
// escapes and non-ASCII, numbers, literals, nested objects and arrays.
func randomValue(rng *rand.Rand, b *bytes.Buffer, depth int) {
	ws := func() {
		b.WriteString([]string{"", "", " ", "\t", "\r\n "}[rng.IntN(5)])
	}
	switch k := rng.IntN(7); {
	case k == 0 && depth < 3:
		randomObject(rng, b, depth+1)
	case k == 1 && depth < 3:
		b.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			randomValue(rng, b, depth+1)
			ws()
		}
		b.WriteByte(']')
	case k == 2:
		b.WriteString([]string{"0", "-12.5e3", "42", "12345678901234567890", "true", "false", "null"}[rng.IntN(7)])
	default:
		b.WriteString([]string{`"plain"`, `"br{ac}es [x]"`, `"q\"uo\\te"`, `"\u00e9t\u00e9 \n"`, `"é ü 漢"`, `""`, `"\\"`, `"a\/b"`}[rng.IntN(8)])
	}
}

func randomObject(rng *rand.Rand, b *bytes.Buffer, depth int) {
	keys := []string{`"id"`, `"text"`, `"meta"`, `"url"`, `"meta.url"`, `"\u0069d"`, `"te\"xt"`, `"a"`, `"b"`}
	b.WriteByte('{')
	for i := range rng.IntN(6) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString([]string{"", " ", "\t"}[rng.IntN(3)])
		b.WriteString(keys[rng.IntN(len(keys))])
		b.WriteString([]string{":", " : ", ":\t"}[rng.IntN(3)])
		randomValue(rng, b, depth)
	}
	b.WriteString([]string{"}", " }"}[rng.IntN(2)])
}

// Ensure that the scanner finds the same raw value (or the same error) as
// decoding into maps did, on 20,000 random objects with nested values,
// repeated and escaped keys and strings full of JSON syntax; and that the
// string decoding agrees with encoding/json.
func TestMemberMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	paths := []string{"id", "text", "meta.url", "meta.meta.url", "a.b", "te\"xt", "url"}
	var b bytes.Buffer
	for n := range 20000 {
		b.Reset()
		randomObject(rng, &b, 0)
		line := b.Bytes()
		if !json.Valid(line) {
			t.Fatalf("generated invalid JSON %s", line)
		}
		var s lineScan
		if !s.scan(line) || !s.object {
			t.Fatalf("lineScan refused %s", line)
		}
		for _, p := range paths {
			want, werr := mapLookup(line, p)
			got, gerr := lookup(line, p)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(got, want) {
				t.Fatalf("line %d %s, path %q: scanner %q, %v; encoding/json %q, %v", n, line, p, got, gerr, want, werr)
			}
			if got, gerr = lookupIn(s.member, p); fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(got, want) {
				t.Fatalf("line %d %s, path %q: lineScan %q, %v; encoding/json %q, %v", n, line, p, got, gerr, want, werr)
			}
			if gerr != nil {
				continue
			}
			var ws string
			wok := json.Unmarshal(want, &ws) == nil && want[0] == '"'
			gs, gok := jsonString(got)
			if wok != gok || ws != gs {
				t.Fatalf("line %d, path %q: string %q %v, encoding/json %q %v", n, p, gs, gok, ws, wok)
			}
		}
	}
}

// jsonSeeds are the seed corpus of the fuzz targets: records, escapes,
// surrogates, invalid UTF-8, numbers, nesting and near misses.
var jsonSeeds = []string{
	`{"id":"a","text":"plain"}`,
	`{"id":"a","id":"b","text":"a repeated id"}`,
	`{"id":"a","text":"one","text":"two"}`,
	`{"\u0069d":"a","id":"b","text":"an escaped repeat"}`,
	`{"id":"a","text":"nested repeats are not top-level","m":{"id":1,"id":2}}`,
	` {"id" : 42 , "text" : "x\ny \"q\" \u00e9 \ud83d\ude00"} `,
	`{"id":"\ud800","text":"lone"}`,
	`{"id":"\ud800\u0041","text":"\udc00\ud800"}`,
	"{\"id\":\"b\xff\",\"text\":\"c\xc3(\"}",
	`{"id":-1.5e+3,"text":"t","id":"last"}`,
	`{"id":"a","text":"t","meta":{"url":"u","n":[1,{"x":null}]},"meta.url":"v"}`,
	`{"\u0069d":"esc","te\"xt":"q","text":"\/\b\f\r\t\\"}`,
	`{"id":0,"text":""}`, `{"id":01,"text":"x"}`, `{"id":1.,"text":"x"}`, `{"id":.5,"text":"x"}`,
	`{"id":"a","text":"x",}`, `{"id":"a" "text":"x"}`, `{"id":"a","text":"x"`, `{"id":"a","text":"\x"}`,
	`{"id":"a","text":"\u12g4"}`, "{\"id\":\"a\",\"text\":\"tab\there\"}",
	`[1,2]`, `null`, `"s"`, `true`, `{}`, `{"id":true,"text":false}`, `{"id":nul}`,
	`{"id":"a","text":["x"]}`, `{"id":{"x":1},"text":"x"}`, ``, ` `, `{`, `}`, `[[[]]]`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	`{"a":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat("}", 10000),
}

// Ensure that lineScan accepts exactly what json.Valid accepts, and that
// on an object it finds the same members as decoding into maps: the
// whole path, then nested; and that unquote decodes every string value
// as encoding/json does.
func FuzzScanLine(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s lineScan
		ok := s.scan(b)
		if want := json.Valid(b); ok != want {
			t.Fatalf("lineScan %v, json.Valid %v on %q", ok, want, b)
		}
		if !ok {
			return
		}
		start := skipSpace(b, 0)
		if s.object != (b[start] == '{') {
			t.Fatalf("object %v on %q", s.object, b)
		}
		if !s.object {
			return
		}
		top, err := treeDecode(json.NewDecoder(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("%q: encoding/json's tokens: %v", b, err)
		}
		for _, p := range []string{"id", "text", "meta.url", "a.a.a", "te\"xt", "meta.url.x"} {
			want, werr := mapLookup(b, p)
			got, gerr := lookupIn(s.member, p)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(got, want) {
				t.Fatalf("%q, path %q: lineScan %q, %v; encoding/json %q, %v", b, p, got, gerr, want, werr)
			}
			if got, want := s.ambiguous(p), treeAmbiguous(top.([]treeMember), p); (got != "") != want {
				t.Fatalf("%q, path %q: ambiguous %q, the oracle %v", b, p, got, want)
			}
		}
		for _, m := range s.members {
			if m.val[0] != '"' {
				continue
			}
			var want string
			if err := json.Unmarshal(m.val, &want); err != nil {
				t.Fatalf("%q: encoding/json: %v", m.val, err)
			}
			if got, ok := unquote(m.val); !ok || got != want {
				t.Fatalf("unquote %q = %q, %v; encoding/json %q", m.val, got, ok, want)
			}
			// NB: encoding/json decodes a lone surrogate to U+FFFD: one
			// found means one there; none found, and no U+FFFD written
			// or escaped, means none there.
			lone, replaced := loneSurrogate(m.val), strings.ContainsRune(want, utf8.RuneError)
			if lone >= 0 && !replaced || lone < 0 && replaced && !bytes.ContainsRune(m.val, utf8.RuneError) && !bytes.Contains(bytes.ToLower(m.val), []byte("fffd")) && utf8.Valid(m.val) {
				t.Fatalf("loneSurrogate %q = %d; encoding/json %q", m.val, lone, want)
			}
			if (lone >= 0) != oracleLoneSurrogate(m.val) {
				t.Fatalf("loneSurrogate %q = %d; the escapes' oracle %v", m.val, lone, oracleLoneSurrogate(m.val))
			}
			if got, ok := jsonString(m.val); !ok || got != want {
				t.Fatalf("jsonString %q = %q, %v; encoding/json %q", m.val, got, ok, want)
			}
		}
	})
}

// oracleRecord is the {"id","text"} record as encoding/json reads it,
// with lshdb's rules on ids (a string of valid UTF-8 without lone
// surrogate escapes, or a number as written); ok is false for a bad
// record.
func oracleRecord(b []byte) (id, text string, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return "", "", false
	}
	// A repeated "id" or "text" (encoding/json keeps the last) is refused.
	if n := topKeyCounts(b); n["id"] > 1 || n["text"] > 1 {
		return "", "", false
	}
	rawID, hasID := m["id"]
	rawText, hasText := m["text"]
	if !hasID || !hasText || len(rawID) == 0 || len(rawText) == 0 {
		return "", "", false
	}
	switch c := rawID[0]; {
	case c == '"':
		if !utf8.Valid(rawID) || json.Unmarshal(rawID, &id) != nil {
			return "", "", false
		}
		// An escape of half a surrogate pair (encoding/json reads it as
		// U+FFFD) is refused, as in the text.
		if oracleLoneSurrogate(rawID) {
			return "", "", false
		}
	case c == '-' || c >= '0' && c <= '9':
		id = string(rawID)
	default:
		return "", "", false
	}
	// NB: a text that is not UTF-8 is refused (encoding/json would
	// replace its bad bytes with U+FFFD).
	if rawText[0] != '"' || !utf8.Valid(rawText) || json.Unmarshal(rawText, &text) != nil {
		return "", "", false
	}
	// NB: a text with an escape of half a surrogate pair is refused too
	// (encoding/json would read it as U+FFFD).
	if oracleLoneSurrogate(rawText) {
		return "", "", false
	}
	return id, text, true
}

// escapeRE matches one escape of a JSON string: \uXXXX (its hex digits the
// submatch) or a backslash and the byte after it. Matched left to right,
// each backslash takes the byte after it, so \\ud800 is no escape of u.
var escapeRE = regexp.MustCompile(`\\(?:u([0-9a-fA-F]{4})|.)`)

// oracleLoneSurrogate is the oracle of loneSurrogate: whether the JSON
// string raw holds a \u escape of a surrogate that is not half of a pair
// (a high half directly followed by an escape of a low half).
func oracleLoneSurrogate(raw []byte) bool {
	ms := escapeRE.FindAllSubmatchIndex(raw, -1)
	hex := func(m []int) uint64 {
		if m[2] < 0 {
			return 0
		}
		v, _ := strconv.ParseUint(string(raw[m[2]:m[3]]), 16, 32)
		return v
	}
	for i := 0; i < len(ms); i++ {
		switch v := hex(ms[i]); {
		case v >= 0xd800 && v <= 0xdbff:
			if i+1 < len(ms) && ms[i+1][0] == ms[i][1] && hex(ms[i+1]) >= 0xdc00 && hex(ms[i+1]) <= 0xdfff {
				i++
				continue
			}
			return true
		case v >= 0xdc00 && v <= 0xdfff:
			return true
		}
	}
	return false
}

// Ensure that the {"id","text"} fast path (lineScan, its member table and
// unquote) reads every line as encoding/json does: the same records, the
// same refusals.
func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	o := Options{}
	o.EnsureDefaults()
	var s lineScan
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(bytes.TrimSpace(b)) == 0 {
			return // NB: a blank line is skipped before parsing
		}
		rec, err := parseJSON(&o, &s, "f", 1, b)
		id, text, ok := oracleRecord(b)
		if (err == nil) != ok {
			t.Fatalf("%q: parseJSON %+v, %v; encoding/json ok=%v (%q, %q)", b, rec, err, ok, id, text)
		}
		if ok && (rec.ID != id || rec.Text != text) {
			t.Fatalf("%q: parseJSON id %q text %q; encoding/json id %q text %q", b, rec.ID, rec.Text, id, text)
		}
	})
}

// Ensure that MemberOf finds one of the keys an object has among its
// top-level members only (none when it has none), an escaped key included, as
// encoding/json's decoding into a map (the oracle) sees the members.
func TestMemberOf(t *testing.T) {
	keys := []string{"duplicate_of", "similarity"}
	for _, obj := range []string{
		`{"a":1,"duplicate_of":"x"}`,
		`{ "similarity" : null , "duplicate_of":2}`,
		`{"nested":{"similarity":1},"b":[{"duplicate_of":1}]}`,
		`{"s\u0069milarity":2}`,
		`{}`,
		`{"text":"\"duplicate_of\": no"}`,
	} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(obj), &m); err != nil {
			t.Fatal(err)
		}
		wantOK := false
		for _, k := range keys {
			_, has := m[k]
			wantOK = wantOK || has
		}
		got, ok := MemberOf([]byte(obj), keys)
		if _, has := m[got]; ok != wantOK || ok && !has {
			t.Errorf("%s: %q %v, want one of %q: %v", obj, got, ok, keys, wantOK)
		}
	}
}

// topKeyCounts counts the keys of the top-level JSON object b (valid), as
// encoding/json's tokens decode them.
func topKeyCounts(b []byte) map[string]int {
	dec := json.NewDecoder(bytes.NewReader(b))
	n := map[string]int{}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return n
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return n
		}
		k, _ := t.(string)
		n[k]++
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return n
		}
	}
	return n
}

// treeMember is a member of an object as decoded by treeDecode: every
// member kept, repeats included, in order.
type treeMember struct {
	key string
	val any // []treeMember for an object, else nil
}

// treeDecode decodes one JSON value from dec's tokens (encoding/json),
// keeping each object's members in order, repeats included: the oracle's
// view of a line, which maps (mapLookup) cannot give.
func treeDecode(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil, nil
	}
	if d == '[' {
		for dec.More() {
			if _, err := treeDecode(dec); err != nil {
				return nil, err
			}
		}
		_, err = dec.Token()
		return nil, err
	}
	var ms []treeMember
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := treeDecode(dec)
		if err != nil {
			return nil, err
		}
		ms = append(ms, treeMember{k.(string), v})
	}
	_, err = dec.Token()
	return ms, err
}

// treeAmbiguous is the oracle of lineScan.ambiguous: the dotted path is
// ambiguous when a key on it is met more than once, counting every member
// of every object reached through every copy, or when the whole path is a
// key of the top object beside the nested path.
func treeAmbiguous(top []treeMember, path string) bool {
	whole := 0
	for _, m := range top {
		if m.key == path {
			whole++
		}
	}
	if whole > 1 {
		return true
	}
	if !strings.Contains(path, ".") {
		return false
	}
	objs := [][]treeMember{top}
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		var next [][]treeMember
		n := 0
		for _, o := range objs {
			for _, m := range o {
				if m.key == seg {
					n++
					if ms, ok := m.val.([]treeMember); ok {
						next = append(next, ms)
					}
				}
			}
		}
		switch {
		case n > 1:
			return true
		case n == 0:
			return false
		case i == len(segs)-1:
			return whole == 1
		}
		objs = next
	}
	return false
}

// Ensure that lineScan.ambiguous agrees with the oracle (encoding/json's
// tokens, every member kept) on 20,000 random objects whose keys repeat,
// nest and hold dots, and on cases worked out by hand.
func TestAmbiguousPaths(t *testing.T) {
	for _, c := range []struct {
		line, path string
		want       bool
	}{
		{`{"id":"a","text":"t"}`, "id", false},
		{`{"id":"a","id":"b"}`, "id", true},
		{`{"\u0069d":"a","id":"b"}`, "id", true},
		{`{"meta":{"url":"a","url":"b"}}`, "meta.url", true},
		{`{"meta":{"url":"a"},"meta":{"url":"b"}}`, "meta.url", true},
		{`{"meta":{"url":"a"},"meta":{"x":1}}`, "meta.url", true}, // the last meta has no url: lookupIn's "no field" would mislead
		{`{"meta":{"url":"a"},"m":{"url":"b"}}`, "meta.url", false},
		{`{"meta.url":"a","meta":{"url":"b"}}`, "meta.url", true},
		{`{"meta.url":"a","meta":{"x":"b"}}`, "meta.url", false},
		{`{"meta.url":"a","meta":"b"}`, "meta.url", false},
		{`{"meta":{"a":{"url":1,"url":2}}}`, "meta.url", false}, // not on the path
		{`{"doc":{"body":"x","body":"y"}}`, "doc.body", true},
		{`{"a":{"b":{"c":1}},"a":2}`, "a.b.c", true},
		{`{"a":{"b":{"c":1,"c":2}}}`, "a.b.c", true},
		{`{"a":{"b":{"c":1}}}`, "a.b.c", false},
		{`{"a":{"b":[{"c":1},{"c":2}]}}`, "a.b.c", false},
	} {
		var s lineScan
		if !s.scan([]byte(c.line)) {
			t.Fatalf("%s: not scanned", c.line)
		}
		if got := s.ambiguous(c.path) != ""; got != c.want {
			t.Errorf("%s, path %q: ambiguous %v (%q), want %v", c.line, c.path, got, s.ambiguous(c.path), c.want)
		}
		top, err := treeDecode(json.NewDecoder(strings.NewReader(c.line)))
		if err != nil {
			t.Fatal(err)
		}
		if got := treeAmbiguous(top.([]treeMember), c.path); got != c.want {
			t.Errorf("%s, path %q: the oracle says %v, the case %v", c.line, c.path, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	paths := []string{"id", "text", "meta", "meta.url", "meta.meta.url", "a.b", "te\"xt", "url", "a.b.a"}
	var b bytes.Buffer
	found := 0
	for n := range 20000 {
		b.Reset()
		randomObject(rng, &b, 0)
		line := b.Bytes()
		var s lineScan
		if !s.scan(line) || !s.object {
			t.Fatalf("lineScan refused %s", line)
		}
		top, err := treeDecode(json.NewDecoder(bytes.NewReader(line)))
		if err != nil {
			t.Fatalf("line %d %s: %v", n, line, err)
		}
		for _, p := range paths {
			want := treeAmbiguous(top.([]treeMember), p)
			if got := s.ambiguous(p); (got != "") != want {
				t.Fatalf("line %d %s, path %q: ambiguous %q, the oracle %v", n, line, p, got, want)
			}
			if want && strings.Contains(p, ".") {
				found++
			}
		}
	}
	if found < 100 {
		t.Fatalf("only %d ambiguous dotted paths among the random objects: the test does not exercise them", found)
	}
}

// Ensure that loneSurrogate finds the first \u escape of a surrogate that
// is not half of a pair, and no other: cases worked out by hand (offsets
// in the string as written, its opening quote at 0).
func TestLoneSurrogate(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int
	}{
		{`"plain"`, -1},
		{`"a\ud800b"`, 2},
		{`"\ud83d\ude00"`, -1}, // a pair: U+1F600
		{`"\uDBFF\uDFFF"`, -1}, // a pair, upper case
		{`"\ude00\ud83d"`, 1},  // the low half first
		{`"\ud83d\u0041"`, 1},  // a high half, then no low one
		{`"\ud83d"`, 1},        // at the end
		{`"\\ud800"`, -1},      // an escaped backslash, then the letters ud800
		{`"\\\ud800"`, 3},      // an escaped backslash, then the escape
		{`"x\u00e9\ud800"`, 8},
		{`"\ufffd"`, -1},
		{`"\n\ud800\udc00\udc00"`, 15}, // a pair, then a low half alone
	} {
		if got := loneSurrogate([]byte(c.raw)); got != c.want {
			t.Errorf("loneSurrogate(%s) = %d, want %d", c.raw, got, c.want)
		}
		if got := oracleLoneSurrogate([]byte(c.raw)); got != (c.want >= 0) {
			t.Errorf("the oracle of %s says %v", c.raw, got)
		}
	}
}
