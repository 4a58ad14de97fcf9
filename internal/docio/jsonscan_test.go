package docio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
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
		for _, p := range paths {
			want, werr := mapLookup(line, p)
			got, gerr := lookup(line, p)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || !bytes.Equal(got, want) {
				t.Fatalf("line %d %s, path %q: scanner %q, %v; encoding/json %q, %v", n, line, p, got, gerr, want, werr)
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
