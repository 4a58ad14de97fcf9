package bands_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/minhash"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/pipeline.json from the current code")

// goldenCase is one fixed text under one configuration, with every value
// the pipeline persists: shingle set, signature and band keys.
type goldenCase struct {
	Name      string   `json:"name"`
	TextHex   string   `json:"text_hex"` // hex, so that invalid UTF-8 survives JSON
	Kind      string   `json:"kind"`
	K         int      `json:"k"`
	Bag       bool     `json:"bag"`
	Scheme    string   `json:"scheme"`
	NumPerm   int      `json:"num_perm"`
	Seed      uint64   `json:"seed"`
	Bands     int      `json:"bands"`
	Rows      int      `json:"rows"`
	Set       []string `json:"set"`
	Signature []string `json:"signature"`
	BandKeys  []string `json:"band_keys"`
}

func goldenInputs() []goldenCase {
	texts := []struct{ name, text string }{
		{"pangram", "The quick brown fox jumps over the lazy dog."},
		{"multibyte", "Perché è così?  東京都庁 👍🏽 ÀÉÎ"},
		{"short", "abc"},
		{"invalid-utf8", "A\xffB\xe2\x82 c"},
		{"repeats", "la la la la land, la la land"},
	}
	var out []goldenCase
	for _, t := range texts {
		h := hex.EncodeToString([]byte(t.text))
		out = append(out,
			goldenCase{Name: t.name + "/char5-fss", TextHex: h, Kind: "char", K: 5, Scheme: "fss", NumPerm: 128, Bands: 16, Rows: 6},
			goldenCase{Name: t.name + "/word2-bag-fss-seed42-k16", TextHex: h, Kind: "word", K: 2, Bag: true, Scheme: "fss", NumPerm: 16, Seed: 42, Bands: 4, Rows: 4},
			goldenCase{Name: t.name + "/char5-oph", TextHex: h, Kind: "char", K: 5, Scheme: "oph", NumPerm: 128, Bands: 16, Rows: 6},
			goldenCase{Name: t.name + "/char5-classic", TextHex: h, Kind: "char", K: 5, Scheme: "classic", NumPerm: 128, Bands: 16, Rows: 6},
			goldenCase{Name: t.name + "/word2-bag-oph-seed42-k16", TextHex: h, Kind: "word", K: 2, Bag: true, Scheme: "oph", NumPerm: 16, Seed: 42, Bands: 4, Rows: 4},
		)
	}
	return out
}

func hexes[T uint32 | uint64](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%x", v)
	}
	return out
}

func computeGolden(t *testing.T, c goldenCase) goldenCase {
	t.Helper()
	text, err := hex.DecodeString(c.TextHex)
	if err != nil {
		t.Fatal(err)
	}
	kind, err := minhash.ParseShingleKind(c.Kind)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := minhash.ParseScheme(c.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	h, err := minhash.NewHasher(minhash.Options{Kind: kind, K: c.K, Bag: c.Bag},
		minhash.SketchOptions{Scheme: scheme, NumPerm: c.NumPerm, Seed: c.Seed})
	if err != nil {
		t.Fatal(err)
	}
	set, sig := h.Document(nil, nil, string(text))
	keys, err := bands.AppendKeys(nil, sig, bands.Params{B: c.Bands, R: c.Rows})
	if err != nil {
		t.Fatal(err)
	}
	c.Set, c.Signature, c.BandKeys = hexes(set), hexes(sig), hexes(keys)
	return c
}

// Ensure that shingle hashes, signatures and band keys of fixed texts never
// change: they are a storage format. Run with -update only for a deliberate
// format change (and bump the format version).
func TestGoldenPipeline(t *testing.T) {
	path := filepath.Join("..", "testdata", "golden", "pipeline.json")
	var got []goldenCase
	for _, c := range goldenInputs() {
		got = append(got, computeGolden(t, c))
	}
	if *update {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []goldenCase
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("golden file has %d cases, the test %d", len(want), len(got))
	}
	for i := range want {
		if !reflect.DeepEqual(computeGolden(t, want[i]), want[i]) {
			t.Errorf("%s: the pipeline's values changed (hashes are a storage format)", want[i].Name)
		}
	}
}
