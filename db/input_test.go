package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// tokenJaccard is the oracle: exact Jaccard of two token lists as sets of
// strings, computed with no hashing.
func tokenJaccard(a, b []string) float64 {
	sa := make(map[string]bool, len(a))
	for _, t := range a {
		sa[t] = true
	}
	sb := make(map[string]bool, len(b))
	for _, t := range b {
		sb[t] = true
	}
	inter := 0
	for t := range sa {
		if sb[t] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

// tokenSets returns n token lists in families of near-duplicates: each
// family's base list of 40 to 80 tokens from a vocabulary of 5,000, and
// copies with a few tokens replaced.
func tokenSets(seed uint64, n int) [][]string {
	r := rand.New(rand.NewPCG(seed, 1))
	word := func() string { return fmt.Sprintf("w%d", r.IntN(5000)) }
	var out [][]string
	for len(out) < n {
		base := make([]string, 40+r.IntN(40))
		for i := range base {
			base[i] = word()
		}
		out = append(out, base)
		for range r.IntN(4) {
			c := slices.Clone(base)
			for range r.IntN(6) {
				c[r.IntN(len(c))] = word()
			}
			out = append(out, c)
		}
	}
	return out[:n]
}

// Ensure that sets put as tokens into a sets index are found by QuerySet
// with their exact Jaccard (the oracle: Jaccard of the token strings, no
// hashing), that no pair below the threshold is reported, that every pair
// above it is (the families are far above it), and that a reopened index
// answers the same.
func TestPutSetQuerySet(t *testing.T) {
	const th = 0.7
	sets := tokenSets(7, 300)
	dir := t.TempDir()
	d := mustOpen(t, dir, &Options{Storage: StorageSets, Threshold: th})
	docs := make([]Doc, len(sets))
	for i, s := range sets {
		docs[i] = Doc{ID: fmt.Sprintf("s%03d", i), Set: Tokens(s...), Meta: []byte(fmt.Sprint("meta ", i))}
	}
	if _, err := d.PutBatch(docs[:len(docs)-1], nil); err != nil {
		t.Fatal(err)
	}
	last := len(sets) - 1
	if err := d.PutSet(docs[last].ID, docs[last].Set, nil); err != nil {
		t.Fatal(err)
	}
	check := func(d *DB) {
		t.Helper()
		found, want := 0, 0
		for i, s := range sets {
			res, err := d.QuerySet(context.Background(), Tokens(s...), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Match{}
			for _, m := range res.Matches {
				got[m.ID] = m
			}
			for j, o := range sets {
				id := docs[j].ID
				jac := tokenJaccard(s, o)
				m, ok := got[id]
				switch {
				case ok && m.Jaccard != jac:
					t.Fatalf("query %d: %s has Jaccard %v, the token sets' %v", i, id, m.Jaccard, jac)
				case ok && string(m.Meta) != string(docs[j].Meta) && j != last, ok && j == last && m.Meta != nil:
					t.Fatalf("query %d: %s carries meta %q", i, id, m.Meta)
				case ok && jac < th:
					t.Fatalf("query %d: %s reported at %v < %v", i, id, jac, th)
				}
				if jac >= th {
					want++
					if ok {
						found++
					}
				}
			}
			if res.EstimateOnly {
				t.Fatal("a sets index answered with estimates")
			}
		}
		if float64(found) < 0.99*float64(want) || want < len(sets)+100 {
			t.Fatalf("found %d of %d pairs at or above %v", found, want, th)
		}
	}
	check(d)
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("check: %v %+v", err, rep)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = mustOpen(t, dir, nil)
	defer d.Close()
	check(d)
}

// Ensure that Hashes of small integers (which a sets index would collapse
// if it took their high 32 bits as they are) keep their exact Jaccard, and
// that Hashes and Tokens name different elements.
func TestHashesSmallIntegers(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets, Threshold: 0.5})
	defer d.Close()
	a := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 11, 12} // 8 shared of 12: 2/3
	if err := d.PutSet("a", Hashes(a...), nil); err != nil {
		t.Fatal(err)
	}
	res, err := d.QuerySet(context.Background(), Hashes(b...), &QueryOptions{Threshold: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].Jaccard != 8.0/12 {
		t.Fatalf("matches %+v, want a at 8/12", res.Matches)
	}
	res, err = d.QuerySet(context.Background(), Tokens("1", "2", "3", "4", "5", "6", "7", "8", "9", "10"), &QueryOptions{Threshold: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 0 {
		t.Fatalf("Tokens of the decimal strings matched Hashes: %+v", res.Matches)
	}
}

// Ensure that a set holding the hash 0 is found by a near-copy without it,
// and not by a set that shares only 0, in every scheme and in sets and
// none storage (the oracle: the sets' Jaccard, counted). Classic hashed 0
// to 0 in every function, so such sets had the all-zero signature: the
// near-copy shared no band, and any two sets holding 0 had the estimate 1.
func TestHashesZero(t *testing.T) {
	var a, b, c []uint64
	for h := range uint64(100) {
		a, b, c = append(a, h), append(b, h+1), append(c, h+1000) // {0..99}, {1..100}, {1000..1099}
	}
	c = append(c, 0) // {0, 1000..1099}: shares only 0 with a
	for _, sc := range []minhash.Scheme{minhash.SchemeFSS, minhash.SchemeOPH, minhash.SchemeClassic} {
		for _, st := range []string{StorageSets, StorageNone} {
			d := mustOpen(t, t.TempDir(), &Options{Storage: st, Scheme: sc, Threshold: 0.8})
			if err := d.PutSet("a", Hashes(a...), nil); err != nil {
				t.Fatal(err)
			}
			res, err := d.QuerySet(context.Background(), Hashes(b...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) != 1 || st == StorageSets && res.Matches[0].Jaccard != 99.0/101 {
				t.Errorf("%v %v: J = 99/101, matches %+v", sc, st, res.Matches)
			}
			if res, err = d.QuerySet(context.Background(), Hashes(c...), nil); err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) != 0 {
				t.Errorf("%v %v: J = 1/200, matches %+v", sc, st, res.Matches)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Ensure that each storage mode keeps what fits and refuses the rest with
// ErrStorageMode, storing nothing: a text index refuses sets and
// signatures, a sets index signatures; a none index keeps both and answers
// with estimates.
func TestInputStorageModes(t *testing.T) {
	sk, err := minhash.NewSketcher(minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sig := sk.Sketch(nil, []uint64{1, 2, 3, 4, 5})
	for _, c := range []struct {
		storage    string
		set, sigOK bool
	}{{StorageText, false, false}, {StorageSets, true, false}, {StorageNone, true, true}} {
		t.Run(c.storage, func(t *testing.T) {
			d := mustOpen(t, t.TempDir(), &Options{Storage: c.storage})
			defer d.Close()
			if err := d.Put(Doc{ID: "t", Text: "a text that stays"}, nil); err != nil {
				t.Fatal(err)
			}
			err := d.PutSet("s", Tokens("a", "b"), nil)
			if c.set != (err == nil) || (err != nil && !errors.Is(err, ErrStorageMode)) {
				t.Errorf("PutSet: %v", err)
			}
			err = d.PutSignature("g", sig, nil)
			if c.sigOK != (err == nil) || (err != nil && !errors.Is(err, ErrStorageMode)) {
				t.Errorf("PutSignature: %v", err)
			}
			// NB: the refusal names the call this index takes (a text
			// index refuses PutSet too).
			if want := map[string]string{StorageText: "put it (Put)", StorageSets: "put it (PutSet)"}[c.storage]; err != nil && !strings.Contains(err.Error(), want) {
				t.Errorf("PutSignature's refusal %q does not say %q", err, want)
			}
			n, _ := d.Count()
			if want := 1 + btoi(c.set) + btoi(c.sigOK); n != uint64(want) {
				t.Errorf("%d documents stored, want %d", n, want)
			}
			if doc, err := d.Get("t"); err != nil || doc.ID != "t" {
				t.Errorf("the text document: %v, %v", doc, err)
			}
			if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
				t.Errorf("check: %v %+v", err, rep)
			}
		})
	}
}

// Ensure that in a none index a precomputed signature is stored as given
// and found by QuerySignature and QueryID, every answer an estimate equal
// to the agreement of the signatures computed outside the index, and that
// a QuerySignature on a sets index estimates too.
func TestPutSignatureQuerySignature(t *testing.T) {
	sk, err := minhash.NewSketcher(minhash.SketchOptions{Scheme: minhash.SchemeDatasketch, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	signOf := func(tokens []string) []uint32 {
		var e []uint64
		for _, tok := range tokens {
			e = append(e, sk.TokenElement(tok))
		}
		return sk.Sketch(nil, e)
	}
	sets := tokenSets(3, 60)
	for _, storage := range []string{StorageNone, StorageSets} {
		t.Run(storage, func(t *testing.T) {
			d := mustOpen(t, t.TempDir(), &Options{Storage: storage, Scheme: minhash.SchemeDatasketch, Threshold: 0.6})
			defer d.Close()
			if p := d.Params(); p.Seed != DatasketchSeed || p.Scheme != minhash.SchemeDatasketch {
				t.Fatalf("params %+v", p)
			}
			for i, s := range sets {
				var err error
				if storage == StorageNone && i%2 == 0 {
					err = d.PutSignature(fmt.Sprint(i), signOf(s), nil)
				} else {
					err = d.PutSet(fmt.Sprint(i), Tokens(s...), nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range sets {
				res, err := d.QuerySignature(context.Background(), signOf(s), nil)
				if err != nil {
					t.Fatal(err)
				}
				if !res.EstimateOnly {
					t.Fatal("a signature query not marked estimate-only")
				}
				self := false
				for _, m := range res.Matches {
					j := 0
					fmt.Sscan(m.ID, &j)
					if want := minhash.Estimate(signOf(s), signOf(sets[j])); m.Estimate != want || m.Estimate < 0.6 || m.Jaccard != 0 {
						t.Fatalf("query %d: %s estimate %v (Jaccard %v), the signatures agree at %v", i, m.ID, m.Estimate, m.Jaccard, want)
					}
					self = self || j == i
				}
				if !self {
					t.Fatalf("query %d did not find its own signature", i)
				}
			}
			if storage == StorageNone {
				res, err := d.QueryID(context.Background(), "0", &QueryOptions{Threshold: 0.01})
				if err != nil || !res.EstimateOnly {
					t.Fatalf("QueryID of a signature put: %+v, %v", res, err)
				}
				doc, err := d.Get("0")
				if err != nil || !slices.Equal(doc.Signature, signOf(sets[0])) {
					t.Fatalf("Get of a signature put: %+v, %v", doc, err)
				}
			}
			if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
				t.Fatalf("check: %v %+v", err, rep)
			}
		})
	}
}

// Ensure that in a text index with word 1-shingles and no normalization,
// QuerySet of a text's words answers as Query of the text: Tokens hashes a
// token as the shingler hashes a shingle of the same text.
func TestQuerySetTextIndex(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Shingle: minhash.ShingleWord, ShingleSize: 1, Normalization: minhash.NormalizeNone, Threshold: 0.5})
	defer d.Close()
	texts := []string{"the quick brown fox jumps over the lazy dog", "the quick brown fox jumped over the lazy dog", "a b c d e f g", "a b c d e f h"}
	for i, s := range texts {
		if err := d.Put(Doc{ID: fmt.Sprint(i), Text: s}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range texts {
		want, err := d.Query(context.Background(), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.QuerySet(context.Background(), Tokens(strings.Fields(s)...), nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || len(got.Matches) == 0 {
			t.Fatalf("QuerySet(%q) = %+v, Query %+v", s, got, want)
		}
	}
}

// Ensure that bad input gets its sentinel and stores nothing.
func TestInputErrors(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageNone, Scheme: minhash.SchemeDatasketch, MaxDocBytes: 600})
	defer d.Close()
	empty := make([]uint32, 128)
	for i := range empty {
		empty[i] = minhash.EmptyValue
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"short signature", d.PutSignature("a", make([]uint32, 64), nil), ErrInvalidSignature},
		{"nil signature", d.PutSignature("a", nil, nil), ErrInvalidSignature},
		{"empty set's signature", d.PutSignature("a", empty, nil), ErrEmptyDocument},
		{"empty set", d.PutSet("a", Tokens(), nil), ErrEmptyDocument},
		{"text and set", second(d.PutBatch([]Doc{{ID: "a", Text: "x", Set: Tokens("x")}}, nil)), ErrInvalidDoc},
		{"set and signature", second(d.PutBatch([]Doc{{ID: "a", Set: Tokens("x"), Signature: make([]uint32, 128)}}, nil)), ErrInvalidDoc},
		{"33-bit hash", d.PutSet("a", Hashes(1, 1<<32), nil), ErrInvalidDoc},
		{"large set", d.PutSet("a", Hashes(make([]uint64, 100)...), nil), ErrDocTooLarge},
		{"bad id", d.PutSet("", Tokens("x"), nil), ErrInvalidID},
		{"query short signature", second(d.QuerySignature(ctx, make([]uint32, 3), nil)), ErrInvalidSignature},
		{"query empty set", second(d.QuerySet(ctx, Tokens(), nil)), ErrEmptyDocument},
		{"query 33-bit hash", second(d.QuerySet(ctx, Hashes(1<<40), nil)), ErrInvalidDoc},
		{"query two inputs", second(d.QueryMany(ctx, []QueryInput{{Text: "x"}, {Text: "y", ID: "z"}}, nil)), ErrInvalidDoc},
		{"query no input", second(d.QueryMany(ctx, []QueryInput{{Text: "x"}, {}}, nil)), ErrInvalidDoc},
		{"query no input, as an empty text", second(d.QueryMany(ctx, []QueryInput{{}}, nil)), ErrEmptyDocument},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	// NB: one line, with no sentinel's text inside it (E3).
	if _, err := d.QueryMany(ctx, []QueryInput{{}}, nil); err == nil || err.Error() != "lshdb: query 0: invalid document: the query is empty: give exactly one of Text (not empty), Set, Signature and ID" {
		t.Errorf("an empty query: %q", err)
	}
	if n, _ := d.Count(); n != 0 {
		t.Errorf("%d documents stored by failed calls", n)
	}
}

func second[T any](_ T, err error) error { return err }

// Ensure that QueryMany answers every kind of input as the single-query
// call does (the oracle: one-by-one queries on the same, unchanged
// index), in input order, and that Match carries Meta always and Text
// when asked. Run with -race: the answers are computed concurrently.
func TestQueryMany(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets, Threshold: 0.6, StoreText: true})
	defer d.Close()
	sets := tokenSets(11, 120)
	var docs []Doc
	for i, s := range sets {
		if i%3 == 0 {
			docs = append(docs, Doc{ID: fmt.Sprint("t", i), Text: strings.Join(s, " "), Meta: []byte{byte(i)}})
		} else {
			docs = append(docs, Doc{ID: fmt.Sprint("s", i), Set: Tokens(s...), Meta: []byte{byte(i)}})
		}
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	qo := &QueryOptions{Threshold: 0.5, WithText: true}
	var qs []QueryInput
	var want []*QueryResult
	for i, s := range sets {
		var in QueryInput
		var res *QueryResult
		var err error
		switch i % 4 {
		case 0:
			in = QueryInput{Text: strings.Join(s, " ")}
			res, err = d.Query(ctx, in.Text, qo)
		case 1:
			in = QueryInput{Set: Tokens(s...)}
			res, err = d.QuerySet(ctx, in.Set, qo)
		case 2:
			in = QueryInput{ID: docs[i].ID}
			res, err = d.QueryID(ctx, in.ID, qo)
		case 3:
			doc, gerr := d.Get(docs[i].ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			in = QueryInput{Signature: doc.Signature}
			res, err = d.QuerySignature(ctx, in.Signature, qo)
		}
		if err != nil {
			t.Fatal(err)
		}
		qs, want = append(qs, in), append(want, res)
	}
	got, err := d.QueryMany(ctx, qs, qo)
	if err != nil {
		t.Fatal(err)
	}
	matches := 0
	for i := range want {
		if fmt.Sprintf("%+v", got[i]) != fmt.Sprintf("%+v", want[i]) {
			t.Fatalf("query %d: QueryMany %+v, one by one %+v", i, got[i], want[i])
		}
		for _, m := range got[i].Matches {
			matches++
			var j int
			fmt.Sscan(m.ID[1:], &j)
			if len(m.Meta) != 1 || m.Meta[0] != byte(j) {
				t.Fatalf("query %d: %s carries meta %v", i, m.ID, m.Meta)
			}
			if wantText := docs[j].Text; m.Text != wantText {
				t.Fatalf("query %d: %s carries text %q, stored %q", i, m.ID, m.Text, wantText)
			}
		}
	}
	if matches < len(sets) {
		t.Fatalf("only %d matches in all: the test proves little", matches)
	}
	if res, err := d.QueryMany(ctx, nil, nil); err != nil || len(res) != 0 {
		t.Fatalf("QueryMany(nil) = %v, %v", res, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.QueryMany(cctx, qs, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("QueryMany on a cancelled context: %v", err)
	}
	// A context that ends while the queries are answered ends the call
	// with its error, not a *QueryError naming whichever query was being
	// answered (an embedder's review, E2).
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	var answered atomic.Int64
	queryHashedHook = func() {
		if answered.Add(1) == 5 {
			cancel()
		}
	}
	defer func() { queryHashedHook = nil }()
	_, err = d.QueryMany(cctx, qs, nil)
	var qe *QueryError
	if !errors.Is(err, context.Canceled) || errors.As(err, &qe) {
		t.Fatalf("QueryMany cancelled while it answered: %v, want context.Canceled alone", err)
	}
}

// Ensure that QueryMany answers on one snapshot: while a writer adds
// copies of the queried texts, every query of one text sees the same
// number of them (one-by-one queries would see more and more).
func TestQueryManySnapshot(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Threshold: 0.5, NoSync: true})
	defer d.Close()
	text := func(i int) string { return fmt.Sprintf("the same base text of every document here, number %d", i%7) }
	for i := range 50 {
		if err := d.Put(Doc{ID: fmt.Sprint("old", i), Text: text(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	qs := make([]QueryInput, 400)
	for i := range qs {
		qs[i] = QueryInput{Text: text(i)}
	}
	done := make(chan error)
	go func() {
		for i := range 200 {
			if err := d.Put(Doc{ID: fmt.Sprint("new", i), Text: text(i)}, nil); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	res, err := d.QueryMany(context.Background(), qs, nil)
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Every answer names the same number of new documents: all from one view.
	counts := map[int]int{}
	for i, r := range res {
		n := 0
		for _, m := range r.Matches {
			if strings.HasPrefix(m.ID, "new") {
				n++
			}
		}
		if prev, ok := counts[i%7]; ok && prev != n {
			t.Fatalf("query %d sees %d new documents, an earlier one of its text %d", i, n, prev)
		}
		counts[i%7] = n
	}
}

// Ensure that an index created with the datasketch scheme stores, for a
// set put as tokens, the signature datasketch computed for those tokens
// (testdata/datasketch/vectors.json, made by datasketch itself), for its
// defaults (num_perm 128, seed 1, the seed a datasketch index takes by
// default) and another num_perm and seed; that the manifest keeps the
// scheme and seed across a reopen; and that datasketch's hashvalues,
// queried as a signature, find the document at estimate 1.
func TestDatasketchIndex(t *testing.T) {
	b, err := os.ReadFile("../testdata/datasketch/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []struct {
			NumPerm    int      `json:"num_perm"`
			Seed       uint64   `json:"seed"`
			Tokens     []string `json:"tokens"`
			HashValues []uint32 `json:"hashvalues"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	tested := map[[2]uint64]bool{}
	for _, c := range v.Cases {
		if len(c.Tokens) == 0 || (c.Seed != 1 && c.Seed != 7) {
			continue
		}
		key := [2]uint64{uint64(c.NumPerm), c.Seed}
		dir := filepath.Join(t.TempDir(), fmt.Sprint(key))
		o := &Options{Storage: StorageSets, Scheme: minhash.SchemeDatasketch, NumPerm: c.NumPerm}
		if c.Seed != DatasketchSeed {
			o.Seed = c.Seed
		}
		d := mustOpen(t, dir, o)
		if err := d.PutSet("x", Tokens(c.Tokens...), nil); err != nil {
			t.Fatal(err)
		}
		d.Close()
		d = mustOpen(t, dir, &Options{MustExist: true})
		if p := d.Params(); p.Scheme != minhash.SchemeDatasketch || p.Seed != c.Seed || p.NumPerm != c.NumPerm {
			t.Fatalf("reopened params %+v", p)
		}
		doc, err := d.Get("x")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(doc.Signature, c.HashValues) {
			t.Fatalf("num_perm %d seed %d, %d tokens: stored signature differs from datasketch's", c.NumPerm, c.Seed, len(c.Tokens))
		}
		res, err := d.QuerySignature(context.Background(), c.HashValues, nil)
		if err != nil || len(res.Matches) != 1 || res.Matches[0].Estimate != 1 || !res.EstimateOnly {
			t.Fatalf("QuerySignature of datasketch's hashvalues: %+v, %v", res, err)
		}
		d.Close()
		tested[key] = true
	}
	if !tested[[2]uint64{128, 1}] || !tested[[2]uint64{64, 7}] {
		t.Fatalf("vectors tested: %v", tested)
	}
}

// Ensure that Load takes documents given as sets (and, in a none index,
// as signatures) as PutBatch does: the loaded index answers QuerySet
// exactly as an index filled by PutBatch (the oracle), and refuses what
// the mode cannot keep with ErrStorageMode, loading nothing.
func TestLoadSets(t *testing.T) {
	sets := tokenSets(5, 200)
	docs := make([]Doc, len(sets))
	for i, s := range sets {
		docs[i] = Doc{ID: fmt.Sprint(i), Set: Tokens(s...)}
	}
	loaded := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets, Threshold: 0.6})
	defer loaded.Close()
	if _, err := loaded.Load(context.Background(), seqOf(docs), nil); err != nil {
		t.Fatal(err)
	}
	put := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets, Threshold: 0.6})
	defer put.Close()
	if _, err := put.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		a, err := loaded.QuerySet(context.Background(), Tokens(s...), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := put.QuerySet(context.Background(), Tokens(s...), nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) || len(a.Matches) == 0 {
			t.Fatalf("loaded index answers %+v, put one %+v", a, b)
		}
	}
	text := mustOpen(t, t.TempDir(), nil)
	defer text.Close()
	if _, err := text.Load(context.Background(), seqOf(docs), nil); !errors.Is(err, ErrStorageMode) {
		t.Fatalf("loading sets into a text index: %v", err)
	}
	if n, _ := text.Count(); n != 0 {
		t.Fatalf("%d documents loaded", n)
	}
}

// Ensure that Pairs in a none index pairs signatures put with each other
// (at their estimate, the oracle computed here) and with a set put of the
// same tokens: a signature put has no set size, which Pairs' size filter
// must not take for 0.
func TestPairsOfSignatures(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageNone, Threshold: 0.5})
	defer d.Close()
	sk, err := minhash.NewSketcher(minhash.SketchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set := make([]uint64, 100)
	for i := range set {
		set[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	a, b := sk.Sketch(nil, set), sk.Sketch(nil, set[:90])
	if err := d.PutSignature("a", a, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.PutSignature("b", b, nil); err != nil {
		t.Fatal(err)
	}
	toks := make([]string, 50)
	for i := range toks {
		toks[i] = fmt.Sprint("t", i)
	}
	if err := d.PutSet("s1", Tokens(toks...), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.PutSignature("s2", signOfTokens(t, d, toks), nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for p, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s-%s %.4f", p.A, p.B, p.Jaccard))
	}
	// NB: s2, a signature put, has no set size: the size filter does not
	// rule out its pair with s1 (the same tokens).
	want := []string{fmt.Sprintf("a-b %.4f", minhash.Estimate(a, b)), "s1-s2 1.0000"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("pairs %v, want %v", got, want)
	}
}

// Ensure that a query of at least identicalSets candidates, which verifies
// each distinct set once, does not give a candidate the verdict of another
// whose 32-bit set is equal only by a collision of the hashes (sets mode:
// "iprqg" and "pcupq", as in TestSetsCollisionNotGrouped): their
// signatures differ, and so do their estimates. The query's signature
// takes every band but the last from "iprqg" and the last from "pcupq", so
// both are candidates; at 0.5 the first's copies match and the second does
// not. The oracle: minhash.Estimate of the query's and each stored
// document's signatures (a reviewer's C2: the second was reported with the
// first one's estimate).
func TestSetsCollisionQueryVerdicts(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets})
	defer d.Close()
	var docs []Doc
	for i := range identicalSets + 10 {
		docs = append(docs, Doc{ID: fmt.Sprintf("x%03d", i), Text: "iprqg"})
	}
	docs = append(docs, Doc{ID: "y", Text: "pcupq"})
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	x, err := d.Get("x000")
	if err != nil {
		t.Fatal(err)
	}
	y, err := d.Get("y")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x.Shingles, y.Shingles) || slices.Equal(x.Signature, y.Signature) {
		t.Fatalf("not a 32-bit collision: sets %x %x", x.Shingles, y.Shingles)
	}
	b := d.Params().Bands
	q := slices.Clone(x.Signature)
	last := (b.B - 1) * b.R
	copy(q[last:last+b.R], y.Signature[last:last+b.R])
	const threshold = 0.5
	res, err := d.QuerySignature(context.Background(), q, &QueryOptions{Threshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	if res.Candidates != len(docs) {
		t.Fatalf("%d candidates, want all %d documents", res.Candidates, len(docs))
	}
	var want []string
	for _, doc := range docs {
		sd, err := d.Get(doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if minhash.Estimate(q, sd.Signature) >= threshold {
			want = append(want, doc.ID)
		}
	}
	var got []string
	for _, m := range res.Matches {
		sd, err := d.Get(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if e := minhash.Estimate(q, sd.Signature); m.Estimate != e {
			t.Errorf("%s: estimate %v, want %v", m.ID, m.Estimate, e)
		}
		got = append(got, m.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) || slices.Contains(want, "y") {
		t.Errorf("%d matches (y among them: %v), want the %d copies of x (%v)", len(got), slices.Contains(got, "y"), identicalSets+10, len(want))
	}
}

// signOfTokens is the index's signature of a set of tokens, computed
// outside it.
func signOfTokens(t *testing.T, d *DB, toks []string) []uint32 {
	p := d.Params()
	sk, err := minhash.NewSketcher(minhash.SketchOptions{Scheme: p.Scheme, NumPerm: p.NumPerm, Seed: p.Seed})
	if err != nil {
		t.Fatal(err)
	}
	var e []uint64
	for _, tok := range toks {
		e = append(e, sk.TokenElement(tok))
	}
	return sk.Sketch(nil, e)
}

// Ensure that in a sets index two documents whose 32-bit sets are equal
// only by a collision of the hashes (texts "iprqg" and "pcupq": one
// 5-shingle each, whose 64-bit hashes differ and share their high 32
// bits) are not reported by Pairs at Jaccard 1 without a band in common:
// Pairs grouped identical sets by the 32-bit set's fingerprint, while
// their signatures (of the 64-bit hashes) differ, so Query and Explain
// did not find the pair. The oracle: Query and Explain on the same index.
func TestSetsCollisionNotGrouped(t *testing.T) {
	h, _ := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	a, _ := h.Document(nil, nil, "iprqg")
	b, _ := h.Document(nil, nil, "pcupq")
	if slices.Equal(a, b) || !slices.Equal(codec.Set32Of(nil, a), codec.Set32Of(nil, b)) {
		t.Fatalf("the texts' sets are not a 32-bit collision: %x %x", a, b)
	}
	d := mustOpen(t, t.TempDir(), &Options{Storage: StorageSets})
	defer d.Close()
	if _, err := d.PutBatch([]Doc{{ID: "a", Text: "iprqg"}, {ID: "b", Text: "pcupq"}, {ID: "c", Text: "iprqg"}}, nil); err != nil {
		t.Fatal(err)
	}
	var got []Pair
	for p, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	// a and c are the same text: found by Pairs, by Query and Explain.
	var want []Pair
	for _, x := range []string{"a", "b", "c"} {
		res, err := d.QueryID(context.Background(), x, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Matches {
			if x < m.ID {
				want = append(want, Pair{A: x, B: m.ID, Jaccard: m.Jaccard})
			}
		}
	}
	if !slices.Equal(got, want) || len(want) != 1 {
		t.Errorf("pairs %v, queries %v: want [{a c 1}]", got, want)
	}
	if e, err := d.Explain("a", "b"); err != nil || e.Found {
		t.Errorf("explain a b: %+v %v", e, err)
	}
}

// Ensure that MaxMatches bounds the matches of a Query and the sum over a
// QueryMany's queries, after Limit, refusing a call past it with
// ErrInvalidOptions that says so, and that a negative one is refused
// (the oracle: 30 copies of one text, each query matching all 30). The
// server's bound (a security review, SEC-1: 400 queries held 3 GB).
func TestQueryMaxMatches(t *testing.T) {
	const text = "the same short paragraph stored thirty times under thirty ids"
	d := thirtyCopies(t, text)
	ctx := context.Background()
	four := []QueryInput{{Text: text}, {Text: text}, {ID: "d1"}, {Text: text}}
	for _, c := range []struct {
		max, limit, want int // want: the matches of one query; -1: refused
		many             bool
	}{
		{0, 0, 30, false}, {30, 0, 30, false}, {29, 0, -1, false}, {10, 5, 5, false},
		{0, 0, 30, true}, {118, 0, -1, true}, {119, 0, 30, true}, {20, 5, 5, true}, {19, 5, -1, true}, // 30+30+29+30
	} {
		qo := &QueryOptions{MaxMatches: c.max, Limit: c.limit}
		var got []*QueryResult
		var err error
		if c.many {
			got, err = d.QueryMany(ctx, four, qo)
		} else {
			var res *QueryResult
			if res, err = d.Query(ctx, text, qo); err == nil {
				got = []*QueryResult{res}
			}
		}
		if c.want < 0 {
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d matches", c.max)) {
				t.Errorf("%+v: %v, want ErrInvalidOptions saying so", c, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for _, res := range got {
			// The query by id d1 matches the other 29.
			if n := len(res.Matches); n != c.want && !(c.want == 30 && n == 29) {
				t.Errorf("%+v: %d matches, want %d", c, n, c.want)
			}
		}
	}
	if _, err := d.Query(ctx, text, &QueryOptions{MaxMatches: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("MaxMatches -1: %v, want ErrInvalidOptions", err)
	}
}

// thirtyCopies returns a new index (closed at the test's end) holding
// text under the 30 ids d0 to d29: every query of text matches all 30.
func thirtyCopies(t *testing.T, text string) *DB {
	t.Helper()
	d := mustOpen(t, t.TempDir(), nil)
	t.Cleanup(func() { d.Close() })
	var docs []Doc
	for i := range 30 {
		docs = append(docs, Doc{ID: fmt.Sprint("d", i), Text: text})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// Ensure that MaxTextBytes bounds the bytes of text WithText puts in the
// matches of a Query and, summed, of a QueryMany's queries, refusing a
// call past it with ErrInvalidOptions that says so (and, in QueryMany,
// as the call's error, not a QueryError), and that a negative one is
// refused. The oracle: 30 copies of one text of known length, each query
// by text matching all 30, so a query's texts are 30 times its length.
// MaxMatches counts matches, not their bytes: a server answered 697 MB
// to 20 queries (a security review, SEC2-4).
func TestQueryMaxTextBytes(t *testing.T) {
	text := strings.Repeat("a long paragraph stored thirty times under thirty ids ", 20)
	d := thirtyCopies(t, text)
	ctx := context.Background()
	one := int64(30 * len(text)) // the texts of one query's matches
	for _, c := range []struct {
		bound   int64
		queries int // 0: Query
		limit   int
		ok      bool
	}{
		{0, 0, 0, true}, {one, 0, 0, true}, {one - 1, 0, 0, false}, {one / 2, 0, 10, true},
		{3 * one, 3, 0, true}, {3*one - 1, 3, 0, false}, {one + 1, 3, 0, false}, {one, 3, 10, true},
	} {
		qo := &QueryOptions{WithText: true, MaxTextBytes: c.bound, Limit: c.limit}
		var got []*QueryResult
		var err error
		if c.queries > 0 {
			got, err = d.QueryMany(ctx, slices.Repeat([]QueryInput{{Text: text}}, c.queries), qo)
		} else {
			var res *QueryResult
			if res, err = d.Query(ctx, text, qo); err == nil {
				got = []*QueryResult{res}
			}
		}
		if !c.ok {
			var qe *QueryError
			if !errors.Is(err, ErrInvalidOptions) || errors.As(err, &qe) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", c.bound)) {
				t.Errorf("%+v: %v, want ErrInvalidOptions saying so, of the call", c, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		var bytes int64
		for _, res := range got {
			for _, m := range res.Matches {
				if m.Text != text {
					t.Fatalf("%+v: match %s has text %.40q", c, m.ID, m.Text)
				}
				bytes += int64(len(m.Text))
			}
		}
		if c.bound > 0 && bytes > c.bound {
			t.Errorf("%+v: %d bytes of text, over the bound", c, bytes)
		}
	}
	if _, err := d.Query(ctx, text, &QueryOptions{MaxTextBytes: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("MaxTextBytes -1: %v, want ErrInvalidOptions", err)
	}
}

// Ensure that Check names a classic sets or none index's stored all-zero
// signature of a set (an older lshdb's for any set holding the hash 0),
// and nothing else: not the same set's signature as made now, not an fss
// index's, and not a signature put as it is (PutSignature). The record is
// rewritten behind the index's back and Repair rebuilds its postings from
// it, as an older lshdb's put left them; Repair leaves the record.
func TestCheckNamesClassicZeroSignature(t *testing.T) {
	set := Hashes(0, 1, 2, 3, 4, 5, 6, 7)
	for _, c := range []struct {
		scheme  minhash.Scheme
		storage string
		flagged bool
	}{{minhash.SchemeClassic, StorageSets, true}, {minhash.SchemeClassic, StorageNone, true}, {minhash.SchemeFSS, StorageSets, false}} {
		t.Run(c.scheme.String()+"/"+c.storage, func(t *testing.T) {
			d := mustOpen(t, t.TempDir(), &Options{Storage: c.storage, Scheme: c.scheme})
			defer d.Close()
			if err := d.PutSet("zero", set, nil); err != nil {
				t.Fatal(err)
			}
			if err := d.PutSet("other", Tokens("a", "b", "c"), nil); err != nil {
				t.Fatal(err)
			}
			if c.storage == StorageNone {
				if err := d.PutSignature("given", make([]uint32, d.skOpt.NumPerm), nil); err != nil {
					t.Fatal(err)
				}
			}
			if rep := mustCheck(t, d); !rep.OK() {
				t.Fatalf("before the rewrite: %v", rep.Problems)
			}
			rewriteRecord(t, d, "zero", func(r *codec.DocRecord) { clear(r.Signature) })
			if _, err := d.Repair(context.Background()); err != nil {
				t.Fatal(err)
			}
			rep := mustCheck(t, d)
			if !c.flagged {
				if !rep.OK() {
					t.Fatalf("an fss signature of zeros flagged: %v", rep.Problems)
				}
				return
			}
			if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], `"zero"`) || !strings.Contains(rep.Problems[0], "put the document again") {
				t.Fatalf("problems %q, want the one of doc \"zero\"", rep.Problems)
			}
		})
	}
}

func mustCheck(t *testing.T, d *DB) *CheckReport {
	t.Helper()
	rep, err := d.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
