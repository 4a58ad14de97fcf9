package main

import (
	"encoding/binary"
	"github.com/lshdb/lshdb/codec"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// testSets are sorted, de-duplicated 32-bit sets: edge cases, then random
// sets of several sizes and densities.
func testSets() [][]uint32 {
	sets := [][]uint32{
		{},
		{0},
		{math.MaxUint32},
		{0, math.MaxUint32},
		{0, 1, 2, 3, 4, 5, 6, 7, 8},
		{1 << 31, 1<<31 + 1, math.MaxUint32 - 1, math.MaxUint32},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 4, 5, 100, 1000, 50000} {
		for _, span := range []uint64{uint64(n) * 2, 1 << 20, 1 << 32} {
			m := map[uint32]bool{}
			for len(m) < n {
				m[uint32(rng.Uint64N(span))] = true
			}
			s := make([]uint32, 0, n)
			for v := range m {
				s = append(s, v)
			}
			slices.Sort(s)
			sets = append(sets, s)
		}
	}
	// A skewed set: dense values, then one far away.
	skew := make([]uint32, 0, 1001)
	for i := range 1000 {
		skew = append(skew, uint32(i))
	}
	return append(sets, append(skew, 4e9))
}

func TestSetCodingsRoundTrip(t *testing.T) {
	codings := []struct {
		name string
		enc  func([]byte, []uint32) []byte
		dec  func([]uint32, []byte) ([]uint32, error)
	}{
		{"uvarint", appendDeltaUvarint, decodeDeltaUvarint},
		{"group varint", appendGroupVarint, decodeGroupVarint},
		{"rice", codec.AppendRiceSet, codec.DecodeRiceSet},
	}
	for _, c := range codings {
		for i, s := range testSets() {
			b := c.enc([]byte{0xAA}, s)
			if b[0] != 0xAA {
				t.Fatalf("%s: set %d: the prefix was overwritten", c.name, i)
			}
			got, err := c.dec(nil, b[1:])
			if err != nil || !slices.Equal(got, s) {
				t.Fatalf("%s: set %d (%d values): round trip gave %d values, %v", c.name, i, len(s), len(got), err)
			}
			// A truncated or extended encoding is refused.
			if len(b) > 2 {
				if _, err := c.dec(nil, b[1:len(b)-1]); err == nil {
					t.Errorf("%s: set %d: truncated encoding accepted", c.name, i)
				}
			}
			if _, err := c.dec(nil, append(b[1:len(b):len(b)], 0x01)); err == nil {
				t.Errorf("%s: set %d: encoding with a trailing byte accepted", c.name, i)
			}
		}
	}
}

// TestRiceNearBound checks that Golomb-Rice coding of a uniform random set
// is within a few percent of log2 C(2^32, n).
func TestRiceNearBound(t *testing.T) {
	for _, s := range testSets() {
		if len(s) < 1000 || s[len(s)-1] < 1<<31 {
			continue
		}
		bound := log2Binomial(1<<32, len(s)) / 8
		got := float64(len(codec.AppendRiceSet(nil, s)))
		if got < bound || got > 1.05*bound {
			t.Errorf("n = %d: %.0f bytes, bound %.0f", len(s), got, bound)
		}
	}
}

func TestTo32(t *testing.T) {
	in := []uint64{1, 2, 5<<32 | 1, 5<<32 | 9, 6 << 32, math.MaxUint64}
	want := []uint32{0, 5, 6, math.MaxUint32}
	if got := to32(in); !slices.Equal(got, want) {
		t.Errorf("to32 = %v, want %v", got, want)
	}
}

func TestJaccard32(t *testing.T) {
	for _, c := range []struct {
		a, b []uint32
		want float64
	}{
		{nil, nil, 1},
		{[]uint32{1}, nil, 0},
		{[]uint32{1, 2, 3}, []uint32{2, 3, 4}, 0.5},
		{[]uint32{1, 2}, []uint32{1, 2}, 1},
	} {
		if got := jaccard32(c.a, c.b); got != c.want {
			t.Errorf("jaccard32(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestUvarintLen(t *testing.T) {
	for _, x := range []uint64{0, 1, 127, 128, 16383, 16384, math.MaxUint32, math.MaxUint64} {
		if got, want := uvarintLen(x), len(binary.AppendUvarint(nil, x)); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", x, got, want)
		}
	}
}
