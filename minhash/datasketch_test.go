package minhash

import (
	"encoding/json"
	"os"
	"testing"
)

// datasketchVectors is testdata/datasketch/vectors.json, written by
// datasketch itself (make_vectors.py beside it).
type datasketchVectors struct {
	Cases []struct {
		NumPerm    int      `json:"num_perm"`
		Seed       uint64   `json:"seed"`
		Tokens     []string `json:"tokens"`
		HashValues []uint64 `json:"hashvalues"`
	} `json:"cases"`
}

// Ensure that the datasketch scheme's signature of a token list equals the
// hashvalues that datasketch's MinHash computed for it (num_perm 128 with
// seed 1, its defaults, and two other pairs), bit for bit.
func TestDatasketchVectors(t *testing.T) {
	b, err := os.ReadFile("../testdata/datasketch/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v datasketchVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 10 {
		t.Fatalf("%d cases in vectors.json", len(v.Cases))
	}
	for i, c := range v.Cases {
		sk, err := NewSketcher(SketchOptions{Scheme: SchemeDatasketch, NumPerm: c.NumPerm, Seed: c.Seed})
		if err != nil {
			t.Fatal(err)
		}
		elems := make([]uint64, 0, len(c.Tokens))
		for _, tok := range c.Tokens {
			elems = append(elems, sk.TokenElement(tok))
		}
		sig := sk.Sketch(nil, elems)
		if len(sig) != len(c.HashValues) {
			t.Fatalf("case %d: %d values, datasketch %d", i, len(sig), len(c.HashValues))
		}
		for j := range sig {
			if uint64(sig[j]) != c.HashValues[j] {
				t.Fatalf("case %d (num_perm %d, seed %d, %d tokens): value %d is %d, datasketch's %d",
					i, c.NumPerm, c.Seed, len(c.Tokens), j, sig[j], c.HashValues[j])
			}
		}
		// The same hashes given as the caller's own (HashElement) sign alike.
		hashed := elems[:0:0]
		for _, tok := range c.Tokens {
			e, ok := sk.HashElement(uint64(SHA1Hash32([]byte(tok))))
			if !ok {
				t.Fatal("a 32-bit hash out of range")
			}
			hashed = append(hashed, e)
		}
		if got := sk.Sketch(nil, hashed); !equalSig(got, sig) {
			t.Fatalf("case %d: HashElement of sha1_hash32 signs differently from TokenElement", i)
		}
	}
}

func equalSig(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Ensure that the datasketch scheme refuses a seed numpy's RandomState
// refuses, and a caller's hash of more than 32 bits.
func TestDatasketchRanges(t *testing.T) {
	if _, err := NewSketcher(SketchOptions{Scheme: SchemeDatasketch, Seed: 1 << 32}); err == nil {
		t.Error("seed 2^32 accepted")
	}
	sk, err := NewSketcher(SketchOptions{Scheme: SchemeDatasketch, Seed: 1<<32 - 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sk.HashElement(1 << 32); ok {
		t.Error("a 33-bit hash accepted")
	}
	if s, err := ParseScheme("datasketch"); err != nil || s != SchemeDatasketch || s.String() != "datasketch" {
		t.Errorf("ParseScheme(datasketch) = %v, %v", s, err)
	}
}

// Ensure that mod61 is x mod 2^61-1 at the edges (the oracle: Go's %).
func TestMod61(t *testing.T) {
	for _, x := range []uint64{0, 1, mersenne61 - 1, mersenne61, mersenne61 + 1, 2 * mersenne61, 1<<64 - 1, 1<<64 - 2, 7 * mersenne61, 7*mersenne61 + 6} {
		if got, want := mod61(x), x%mersenne61; got != want {
			t.Errorf("mod61(%d) = %d, want %d", x, got, want)
		}
	}
}
