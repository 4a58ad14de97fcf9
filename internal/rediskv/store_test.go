package rediskv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// cluster is the package's Redis Cluster (3 masters, 3 replicas), started
// once by TestMain; nil when redis-server is absent (the tests skip, or
// fail with LSHDB_REQUIRE_REDIS=1).
var cluster *redistest.Cluster

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lshdb-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c, err := redistest.Start(context.Background(), dir)
	switch {
	case errors.Is(err, redistest.ErrNoRedis) && os.Getenv("LSHDB_REQUIRE_REDIS") != "1":
		fmt.Fprintf(os.Stderr, "rediskv: %v: its tests skip\n", err)
	case err != nil:
		fmt.Fprintf(os.Stderr, "rediskv: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	default:
		cluster = c
	}
	code := m.Run()
	if c != nil {
		c.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// open opens a fresh index named after the test on the cluster.
func open(t *testing.T) *Store {
	t.Helper()
	if cluster == nil {
		t.Skip("no redis-server: the Redis Cluster tests skip (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	s, err := Open(context.Background(), "redis+cluster://"+strings.Join(cluster.Addrs, ",")+"/"+name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Flush(context.Background()); s.Close() })
	return s
}

// model is the expected state: each id's record and buckets.
type model struct {
	docs map[string]Put
}

// postings returns the model's posting lists: ids by band bucket.
func (m *model) postings() map[BandBucket][]string {
	out := map[BandBucket][]string{}
	for id, p := range m.docs {
		for band, b := range p.Buckets {
			k := BandBucket{band, b}
			out[k] = append(out[k], id)
		}
	}
	return out
}

// verify checks the store against the model: the count, every id's
// record, every posting list (as ids, through the records), and Check.
func verify(t *testing.T, s *Store, m *model, allIDs []string, lists []BandBucket) {
	t.Helper()
	ctx := context.Background()
	n, err := s.Count(ctx)
	if err != nil || n != uint64(len(m.docs)) {
		t.Fatalf("Count %d, %v; the model has %d", n, err, len(m.docs))
	}
	nums, err := s.DocNums(ctx, allIDs)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Records(ctx, nums)
	if err != nil {
		t.Fatal(err)
	}
	idOfNum := map[uint64]string{}
	for i, id := range allIDs {
		want, ok := m.docs[id]
		switch {
		case ok && (nums[i] == 0 || string(recs[i]) != string(want.Record)):
			t.Fatalf("%s: doc %d record %q, want %q", id, nums[i], recs[i], want.Record)
		case !ok && nums[i] != 0:
			t.Fatalf("%s: deleted, but names doc %d", id, nums[i])
		}
		if ok {
			idOfNum[nums[i]] = id
		}
	}
	got, err := s.Postings(ctx, lists)
	if err != nil {
		t.Fatal(err)
	}
	want := m.postings()
	for i, l := range lists {
		var ids []string
		for _, n := range got[i] {
			id, ok := idOfNum[n]
			if !ok {
				t.Fatalf("band %d bucket %d names doc %d, which no id names", l.Band, l.Bucket, n)
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		w := want[l]
		slices.Sort(w)
		if !slices.Equal(ids, w) {
			t.Fatalf("band %d bucket %d: %v, want %v", l.Band, l.Bucket, ids, w)
		}
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

const bands = 4

// randomPut is a put of id with a random record and buckets among a few,
// so that lists hold several documents.
func randomPut(rng *rand.Rand, id string) Put {
	p := Put{ID: id, Record: []byte(fmt.Sprintf("record of %s #%d", id, rng.IntN(1e6)))}
	for range bands {
		p.Buckets = append(p.Buckets, uint64(rng.IntN(12)))
	}
	return p
}

func allLists() []BandBucket {
	var out []BandBucket
	for band := range bands {
		for b := range 12 {
			out = append(out, BandBucket{band, uint64(b)})
		}
	}
	return out
}

// Ensure that random write sets (new documents, upserts, deletes of
// stored and missing ids) leave the cluster in the model's state after
// each Apply: every id's record, every posting list exactly, the count,
// and Check clean; and that Apply reports replaced and missing ids as the
// model says.
func TestApplyMatchesModel(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(16, 1))
	m := &model{docs: map[string]Put{}}
	var ids []string
	for i := range 60 {
		ids = append(ids, fmt.Sprintf("doc-%02d", i))
	}
	for round := range 30 {
		ws := &WriteSet{}
		used := map[string]bool{}
		replaced, missing := 0, 0
		for range 1 + rng.IntN(12) {
			id := ids[rng.IntN(len(ids))]
			if used[id] {
				continue
			}
			used[id] = true
			if rng.IntN(4) == 0 {
				ws.Deletes = append(ws.Deletes, id)
				if _, ok := m.docs[id]; !ok {
					missing++
				}
				continue
			}
			if _, ok := m.docs[id]; ok {
				replaced++
			}
			ws.Puts = append(ws.Puts, randomPut(rng, id))
		}
		res, err := s.Apply(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if res.Replaced != replaced || len(res.Missing) != missing || len(res.Nums) != len(ws.Puts) {
			t.Fatalf("round %d: %+v; want %d replaced, %d missing", round, res, replaced, missing)
		}
		for _, p := range ws.Puts {
			m.docs[p.ID] = p
		}
		for _, id := range ws.Deletes {
			delete(m.docs, id)
		}
		verify(t, s, m, ids, allLists())
	}
	if len(m.docs) < 10 {
		t.Fatalf("only %d documents at the end: the test tests little", len(m.docs))
	}
}

// Ensure that an Apply stopped after each of its steps (as a crash
// would) never lets a reader see a posting of a document not fully
// written (every posting whose record reads back names a record of the
// old or the new state), that Check then reports the leftovers, and that
// Repair leaves an index Check finds whole, in which every document the
// stopped write set did not touch is as before and every touched id holds
// its old or its new record.
func TestCrashBetweenStepsAndRepair(t *testing.T) {
	ctx := context.Background()
	for step := int32(1); step <= 4; step++ {
		t.Run(fmt.Sprint("after step ", step), func(t *testing.T) {
			s := open(t)
			rng := rand.New(rand.NewPCG(uint64(step), 2))
			m := &model{docs: map[string]Put{}}
			var ids []string
			ws := &WriteSet{}
			for i := range 20 {
				id := fmt.Sprintf("doc-%02d", i)
				ids = append(ids, id)
				p := randomPut(rng, id)
				ws.Puts = append(ws.Puts, p)
				m.docs[id] = p
			}
			if _, err := s.Apply(ctx, ws); err != nil {
				t.Fatal(err)
			}
			verify(t, s, m, ids, allLists())
			// The stopped write set: two upserts, a delete, a new document.
			crashed := &WriteSet{Puts: []Put{randomPut(rng, "doc-01"), randomPut(rng, "doc-02"), randomPut(rng, "new")}, Deletes: []string{"doc-03"}}
			failAfter.Store(step)
			_, err := s.Apply(ctx, crashed)
			failAfter.Store(0)
			if !errors.Is(err, errCrash) {
				t.Fatalf("Apply stopped after step %d: %v", step, err)
			}
			known := map[string]bool{}
			for _, p := range append(slices.Collect(mapValues(m.docs)), crashed.Puts...) {
				known[string(p.Record)] = true
			}
			got, err := s.Postings(ctx, allLists())
			if err != nil {
				t.Fatal(err)
			}
			for _, nums := range got {
				recs, err := s.Records(ctx, nums)
				if err != nil {
					t.Fatal(err)
				}
				for k, r := range recs {
					if r != nil && !known[string(r)] {
						t.Fatalf("doc %d reads as %q, written by nobody", nums[k], r)
					}
				}
			}
			if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) == 0 {
				t.Fatalf("Check after the stopped write: %+v %v; want its leftovers", rep, err)
			}
			if _, err := s.Repair(ctx); err != nil {
				t.Fatal(err)
			}
			if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
				t.Fatalf("after Repair: %+v %v", rep, err)
			}
			all := append(ids, "new")
			nums, _ := s.DocNums(ctx, all)
			recs, _ := s.Records(ctx, nums)
			for i, id := range all {
				touched := slices.ContainsFunc(crashed.Puts, func(p Put) bool { return p.ID == id }) || slices.Contains(crashed.Deletes, id)
				old, had := m.docs[id]
				var newRec []byte
				for _, p := range crashed.Puts {
					if p.ID == id {
						newRec = p.Record
					}
				}
				switch {
				case !touched && (!had || string(recs[i]) != string(old.Record)):
					t.Fatalf("%s, untouched by the stopped write, reads %q, want %q", id, recs[i], old.Record)
				case touched && recs[i] != nil && string(recs[i]) != string(old.Record) && string(recs[i]) != string(newRec):
					t.Fatalf("%s reads %q: neither its old nor its new record", id, recs[i])
				case touched && recs[i] == nil && !slices.Contains(crashed.Deletes, id) && had:
					t.Fatalf("%s, upserted, was lost", id)
				}
			}
		})
	}
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// Ensure that URLs are parsed as documented and bad ones refused with
// ErrURL.
func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url     string
		addrs   string
		cluster bool
		name    string
	}{
		{"redis://localhost:6379/idx", "localhost:6379", false, "idx"},
		{"redis://localhost", "localhost:6379", false, "default"},
		{"redis+cluster://127.0.0.1:7000,127.0.0.1:7001/docs", "127.0.0.1:7000,127.0.0.1:7001", true, "docs"},
	} {
		addrs, cluster, name, err := ParseURL(c.url)
		if err != nil || strings.Join(addrs, ",") != c.addrs || cluster != c.cluster || name != c.name {
			t.Errorf("%s: %v %v %q %v", c.url, addrs, cluster, name, err)
		}
	}
	for _, bad := range []string{"http://x:1", "redis://a:1,b:2/x", "redis://", "redis://h:1/a:b", "redis+cluster://h:1/{x}",
		"redis://h:1/x?y", "redis://h:1/x#y", "redis://h:1/x?", "redis://h:1/v[12]", "redis://h:1/v*", "redis://h:1/v%3F",
		"redis://:sekret@h:1/x?y"} {
		_, _, _, err := ParseURL(bad)
		if !errors.Is(err, ErrURL) {
			t.Errorf("%s: %v, want ErrURL", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "sekret") {
			t.Errorf("%s: the error shows the password: %v", bad, err)
		}
	}
	// The user information gives the credentials; Redact hides the
	// password (and only it).
	c, err := parseURL("redis+cluster://app:sekret@h:1,h:2/docs")
	if err != nil || c.username != "app" || c.password != "sekret" || c.name != "docs" || len(c.addrs) != 2 {
		t.Fatalf("parseURL with credentials: %+v, %v", c, err)
	}
	if c, err := parseURL("redis://:sekret@h:1/docs"); err != nil || c.username != "" || c.password != "sekret" {
		t.Fatalf("parseURL with a password alone: %+v, %v", c, err)
	}
	for in, want := range map[string]string{
		"redis+cluster://app:sekret@h:1,h:2/docs": "redis+cluster://app:xxxxx@h:1,h:2/docs",
		"redis://:sekret@h:1/docs":                "redis://:xxxxx@h:1/docs",
		"redis://h:1/docs":                        "redis://h:1/docs",
		// NB: passwords that do not parse (a bare %, space, # or /):
		// Redact returned them as given, and the message quoted url.Parse's
		// error, which quotes the URL again.
		"redis://:se%zzkret@h:1/docs":      "redis://:xxxxx@h:1/docs",
		"redis://app:se kret@h:1/docs":     "redis://app:xxxxx@h:1/docs",
		"redis://app:se/k#ret@h:1/docs":    "redis://app:xxxxx@h:1/docs",
		"redis+cluster://:s%@h:1,h:2/docs": "redis+cluster://:xxxxx@h:1,h:2/docs",
		// NB: one slash (a typo) parses as a path, with no user: the
		// password was shown (a fuzz campaign's F2).
		"redis:/default:sekret@h:1/docs":  "redis:/default:xxxxx@h:1/docs",
		"rediss:default:sekret@h:1/docs":  "rediss:default:xxxxx@h:1/docs",
		"redis:/h:1/docs":                 "redis:/h:1/docs",
		"redis:/nopassword@h:1/docs":      "redis:/nopassword@h:1/docs",
		"rediss://default:sekret@h:1/idx": "rediss://default:xxxxx@h:1/idx",
		"redis:/default:se:kret@h:1/docs": "redis:/default:xxxxx@h:1/docs",
		"redis://h:6379/name@x":           "redis://h:6379/name@x",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%s) = %s, want %s", in, got, want)
		}
		if _, _, _, err := ParseURL(in); err != nil && strings.Contains(err.Error(), "kret") {
			t.Errorf("ParseURL(%s): the error shows the password: %v", in, err)
		}
	}
	if _, _, _, err := ParseURL("redis://:se%zzkret@h:1/docs"); !errors.Is(err, ErrURL) || !strings.Contains(err.Error(), "%25") {
		t.Errorf("a password with a bare %%: %v, want ErrURL saying how to write it", err)
	}
}

// Ensure that a query's reads take one round trip per node: the b bucket
// reads of a query go to at most the 3 masters in one pipeline each, and
// so do the candidates' records.
func TestQueryRoundTrips(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	ws := &WriteSet{}
	for i := range 200 {
		ws.Puts = append(ws.Puts, randomPut(rng, fmt.Sprintf("d%03d", i)))
	}
	if _, err := s.Apply(ctx, ws); err != nil {
		t.Fatal(err)
	}
	before := s.Pipelines()
	lists := allLists()[:bands]
	got, err := s.Postings(ctx, lists)
	if err != nil {
		t.Fatal(err)
	}
	buckets := s.Pipelines() - before
	var nums []uint64
	for _, g := range got {
		nums = append(nums, g...)
	}
	before = s.Pipelines()
	if _, err := s.Records(ctx, nums); err != nil {
		t.Fatal(err)
	}
	records := s.Pipelines() - before
	t.Logf("a query of %d bands: %d round trips for the buckets, %d for %d candidates' records", len(lists), buckets, records, len(nums))
	if buckets < 1 || buckets > 3 || records < 1 || records > 3 {
		t.Fatalf("round trips: %d for the buckets, %d for the records; want 1 to 3 each (one per master)", buckets, records)
	}
}

// Ensure that slotOf agrees with the servers' CLUSTER KEYSLOT (the
// oracle), hash tags included, and that Sync on a healthy cluster has
// every master's replica acknowledge.
func TestSlotOfAndSync(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 8))
	keys := []string{"", "a", "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{}x", s.prefix + "sync:0"}
	for range 200 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		keys = append(keys, string(b))
	}
	for _, k := range keys {
		want, err := s.c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := slotOf(k); int64(got) != want {
			t.Fatalf("slotOf(%q) = %d, CLUSTER KEYSLOT %d", k, got, want)
		}
	}
	before := s.Pipelines()
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := s.Pipelines() - before; n < 4 {
		t.Fatalf("Sync sent %d pipelines; want CLUSTER SLOTS and one per master", n)
	}
}

// Ensure that Repair adds the postings a live document is missing (a
// writer killed while a write's postings and id went to their nodes at
// once: the id landed, some postings did not), which Check reported and
// Repair left, so that queries missed the document for good. Oracle: the
// model's posting lists, exactly, and the count of postings removed.
func TestRepairRepostsMissingPostings(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	rng := rand.New(rand.NewPCG(5, 5))
	m := &model{docs: map[string]Put{}}
	var ids []string
	ws := &WriteSet{}
	for i := range 20 {
		id := fmt.Sprintf("doc-%02d", i)
		ids = append(ids, id)
		p := randomPut(rng, id)
		ws.Puts = append(ws.Puts, p)
		m.docs[id] = p
	}
	if _, err := s.Apply(ctx, ws); err != nil {
		t.Fatal(err)
	}
	nums, err := s.DocNums(ctx, []string{"doc-03", "doc-07", "doc-11"})
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for i, id := range []string{"doc-03", "doc-07", "doc-11"} {
		for _, band := range []int{0, 2} {
			n, err := s.c.SRem(ctx, s.postKey(band, m.docs[id].Buckets[band]), strconv.FormatUint(nums[i], 10)).Result()
			if err != nil {
				t.Fatal(err)
			}
			removed += int(n)
		}
	}
	if removed != 6 {
		t.Fatalf("removed %d postings, want 6", removed)
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) != 6 {
		t.Fatalf("Check with 6 postings missing: %+v %v", rep, err)
	}
	rep, err := s.Repair(ctx)
	if err != nil || rep.Reposted != 6 || rep.Orphans != 0 || rep.Dangling != 0 {
		t.Fatalf("Repair: %+v %v; want 6 reposted and nothing removed", rep, err)
	}
	verify(t, s, m, ids, allLists())
}

// Ensure that Repair removes the ids whose record is gone (deleted by
// hand here, as an eviction or a write lost with its node would leave
// them) and lists them, with their postings, so that Check is clean
// after it and the count is the ids': it removed the postings and left
// the ids, and Check failed after every repair. A record marked deleted
// whose id still names it is removed with its id. Oracle: the model,
// less the three documents.
func TestRepairRemovesLostIDs(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	rng := rand.New(rand.NewPCG(6, 6))
	m := &model{docs: map[string]Put{}}
	ws := &WriteSet{}
	for i := range 20 {
		id := fmt.Sprintf("doc-%02d", i)
		p := randomPut(rng, id)
		ws.Puts = append(ws.Puts, p)
		m.docs[id] = p
	}
	if _, err := s.Apply(ctx, ws); err != nil {
		t.Fatal(err)
	}
	lost := []string{"doc-03", "doc-07", "doc-11"}
	nums, err := s.DocNums(ctx, lost)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nums[:2] {
		if err := s.c.Del(ctx, s.docKey(n)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.c.HSet(ctx, s.docKey(nums[2]), "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) == 0 {
		t.Fatalf("Check with 3 records lost: %+v %v", rep, err)
	}
	rep, err := s.Repair(ctx)
	if err != nil || !slices.Equal(rep.Lost, lost) {
		t.Fatalf("Repair: %+v %v; want %v lost", rep, err, lost)
	}
	var ids []string
	for _, id := range lost {
		delete(m.docs, id)
	}
	for id := range m.docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	verify(t, s, m, ids, allLists())
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("Check after the repair: %+v %v", rep, err)
	}
	if rep, err := s.Repair(ctx); err != nil || len(rep.Lost)+rep.Orphans+rep.Dangling+rep.Reposted != 0 {
		t.Fatalf("a second Repair: %+v %v; want nothing to mend", rep, err)
	}
}

// Ensure that puts and deletes of the same ids from two writers at once
// keep the live count right: both retired one old document and each
// counted it, and the counter went below zero (Count, info, stats and
// check failed parsing it). Oracle: the ids that name a document at the
// end, and Check.
func TestConcurrentPutDeleteCount(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	ids := []string{"r0", "r1", "r2", "r3", "r4"}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range 150 {
				id := ids[rng.IntN(len(ids))]
				ws := &WriteSet{Deletes: []string{id}}
				if w == 0 {
					ws = &WriteSet{Puts: []Put{randomPut(rng, id)}}
				}
				if _, err := s.Apply(ctx, ws); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	nums, err := s.DocNums(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, n := range nums {
		if n != 0 {
			want++
		}
	}
	if got, err := s.Count(ctx); err != nil || got != uint64(want) {
		t.Fatalf("Count %d, %v; %d ids name a document", got, err, want)
	}
	if _, live, err := s.Counters(ctx); err != nil || live != uint64(want) {
		t.Fatalf("Counters: live %d, %v; want %d", live, err, want)
	}
}

// Ensure that a failed id write fails the Apply: a pipeline's error is
// its first command's, and a new id's SET … GET answers nil there, which
// hid the failure of a later one (a put acknowledged with no id written).
func TestApplyReportsALaterIDFailure(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	// NB: an id key that holds a hash: SET … GET of it fails (WRONGTYPE).
	if err := s.c.HSet(ctx, s.idKey("bad"), "x", "1").Err(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	_, err := s.Apply(ctx, &WriteSet{Puts: []Put{randomPut(rng, "new"), randomPut(rng, "bad")}})
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Apply with a failing id write: %v, want WRONGTYPE", err)
	}
}

// Ensure that Sync does not fail while a master's only replica is synced
// anew (restarted: it acknowledges nothing until its full sync ends), but
// says that master's writes are unreplicated, as for a master alone: every
// synced write failed with ErrNotReplicated for as long as the sync took.
// The master delays the sync (repl-diskless-sync-delay) so that the test
// writes inside it; once the replica is online, Sync waits for it again.
func TestSyncWhileReplicaResyncs(t *testing.T) {
	c := redistest.Require(t) // NB: its own cluster: a node is restarted
	ctx := context.Background()
	s, err := Open(ctx, "redis+cluster://"+strings.Join(c.Addrs, ",")+"/resync")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var alone []string
	s.Unreplicated = func(m string) {
		mu.Lock()
		alone = append(alone, m)
		mu.Unlock()
	}
	master := redis.NewClient(&redis.Options{Addr: c.Addrs[0]})
	defer master.Close()
	info := func() string {
		out, err := master.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	_, rport, ok := strings.Cut(info(), "slave0:ip=127.0.0.1,port=")
	rport, _, _ = strings.Cut(rport, ",")
	replica := slices.Index(c.Addrs, "127.0.0.1:"+rport)
	if !ok || replica < 0 {
		t.Fatalf("no replica of %s among %v: %s", c.Addrs[0], c.Addrs, info())
	}
	for _, kv := range [][2]string{{"repl-diskless-sync", "yes"}, {"repl-diskless-sync-delay", "12"}, {"repl-diskless-sync-max-replicas", "0"}} {
		if err := master.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// NB: a master that never wrote (offset 0) resyncs a replica at once,
	// whatever the delay.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	defer cc.Close()
	for i := range 64 {
		if err := cc.Set(ctx, fmt.Sprintf("resync:%d", i), strings.Repeat("x", 64<<10), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Kill(replica); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(replica); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(info(), "state=wait_bgsave") {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted replica is not being synced: %s", info())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatalf("Sync while the replica of %s is synced anew: %v", c.Addrs[0], err)
	}
	// A second Sync does not wait for the replica: it is known to be
	// synced anew.
	if _, ok := s.noWait.Load(c.Addrs[0]); !ok {
		t.Errorf("Sync did not note that %s's replica is synced anew", c.Addrs[0])
	}
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatalf("a second Sync while the replica of %s is synced anew: %v", c.Addrs[0], err)
	}
	if !strings.Contains(info(), "state=wait_bgsave") {
		t.Fatalf("the sync ended before the writes were checked: the test proves nothing: %s", info())
	}
	mu.Lock()
	if !slices.Contains(alone, c.Addrs[0]) {
		t.Errorf("Sync said nothing of %s's writes being unreplicated (it said %v)", c.Addrs[0], alone)
	}
	mu.Unlock()
	for !strings.Contains(info(), "state=online") {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("the replica did not come online: %s", info())
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	alone = nil
	mu.Unlock()
	time.Sleep(resyncRecheck) // NB: until Sync asks again
	if err := s.Sync(ctx, 5*time.Second); err != nil {
		t.Fatalf("Sync once the replica is online: %v", err)
	}
	if _, ok := s.noWait.Load(c.Addrs[0]); ok {
		t.Errorf("Sync still takes %s's replica for being synced anew once it is online", c.Addrs[0])
	}
	if len(alone) != 0 {
		t.Errorf("Sync once the replica is online called unreplicated: %v", alone)
	}
}

// startServer starts a redis-server of its own on a free loopback port
// (args added to its command line) for the test's life, and returns its
// address.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for start := time.Now(); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("redis-server on %s did not start", addr)
		}
	}
	return addr
}

// Ensure that Sync on a server of its own with no replica (redis://)
// returns without a WAIT, four concurrent first ones too, where it waited
// its whole timeout on every synced
// write (2 s a put, so a document put with a TTL of 2 s had expired when
// its put returned), and says the writes are unreplicated (the warning
// the README promised and no path gave); and that once the server has a
// replica online, Sync waits for it again. Oracle: the server's own count
// of WAIT commands (INFO commandstats).
func TestSyncServerWithoutReplica(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server: the Redis tests skip (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	ctx := context.Background()
	addr := startServer(t)
	s, err := Open(ctx, "redis://"+addr+"/x")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var alone []string
	s.Unreplicated = func(m string) { mu.Lock(); alone = append(alone, m); mu.Unlock() }
	direct := redis.NewClient(&redis.Options{Addr: addr})
	defer direct.Close()
	waits := func() string {
		info, err := direct.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(info, "cmdstat_wait:calls=")
		if !ok {
			return "0"
		}
		n, _, _ := strings.Cut(after, ",")
		return n
	}
	// Concurrent first Syncs wait for the one that asks (they sent WAIT
	// meanwhile, each waiting its whole timeout).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := s.Sync(ctx, time.Minute); err != nil {
				t.Errorf("a first Sync on a server with no replica: %v", err)
			}
		})
	}
	wg.Wait()
	for range 3 {
		if err := s.Sync(ctx, time.Minute); err != nil {
			t.Fatalf("Sync on a server with no replica: %v", err)
		}
	}
	if n := waits(); n != "0" {
		t.Errorf("Sync on a server with no replica sent %s WAIT commands, want none", n)
	}
	mu.Lock()
	if len(alone) == 0 || alone[0] != addr {
		t.Errorf("Sync said nothing of %s's writes being unreplicated (it said %v)", addr, alone)
	}
	mu.Unlock()
	// A replica comes online: Sync asks again within resyncRecheck and
	// waits for it from then on.
	_, port, _ := net.SplitHostPort(addr)
	replica := startServer(t, "--replicaof", "127.0.0.1", port)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		info, err := direct.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online") {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the replica %s did not come online: %s", replica, info)
		}
	}
	time.Sleep(resyncRecheck) // NB: until Sync asks again
	if err := s.Sync(ctx, time.Minute); err != nil {
		t.Fatalf("Sync once a replica is online: %v", err)
	}
	if n := waits(); n != "1" {
		t.Errorf("Sync once a replica is online sent %s WAIT commands, want 1", n)
	}
}

// Ensure that a URL of the wrong kind says which to give: redis:// at a
// node of a cluster, and redis+cluster:// at a single server (Redis's own
// "cluster support disabled" said nothing of the URL).
func TestURLOfTheWrongKind(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server: the Redis Cluster tests skip (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	ctx := context.Background()
	if _, err := Open(ctx, "redis://"+cluster.Addrs[0]+"/x"); !errors.Is(err, ErrURL) || !strings.Contains(err.Error(), "redis+cluster://") {
		t.Errorf("redis:// at a node of a cluster: %v, want ErrURL naming redis+cluster://", err)
	}
	addr := startServer(t)
	_, oerr := Open(ctx, "redis+cluster://"+addr+"/x")
	if !errors.Is(oerr, ErrURL) || !strings.Contains(oerr.Error(), "redis://"+addr+"/x") {
		t.Errorf("redis+cluster:// at a single server: %v, want ErrURL naming redis://%s/x", oerr, addr)
	}
}

// Ensure that puts of documents already due (an expiry in the past) beside
// a sweep leave nothing behind once a last sweep has run: no posting, no
// count, Check clean. The expiry entry was written with the record, before
// the postings, so a sweep could take it in between, find no postings to
// remove, and the postings written after it named no document for good
// (an embedding review saw 16 to 400 of 300 puts' postings dangle).
func TestSweepBesidePutsOfDueDocuments(t *testing.T) {
	ctx := context.Background()
	s := open(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Sweep(ctx, time.Now().UnixNano(), 64); err != nil {
				t.Error(err)
				return
			}
		}
	})
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 400 {
		p := randomPut(rng, fmt.Sprint("x", i%10))
		p.Expires = time.Now().Add(-time.Second).UnixNano()
		if _, err := s.Apply(ctx, &WriteSet{Puts: []Put{p}}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if _, err := s.Sweep(ctx, time.Now().UnixNano(), 64); err != nil {
		t.Fatal(err)
	}
	got, err := s.Postings(ctx, allLists())
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, l := range got {
		left += len(l)
	}
	n, err := s.Count(ctx)
	if err != nil || n != 0 || left != 0 {
		t.Fatalf("after the last sweep: count %d (%v), %d postings left; want none", n, err, left)
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("check: %d problems, e.g. %q; %v", len(rep.Problems), rep.Problems[:min(3, len(rep.Problems))], err)
	}
}

// Ensure that Sync waits for the replicas of a cluster known by a host
// name: go-redis names a loopback node by the seed's host ("localhost"),
// CLUSTER SHARDS by its IP, and Sync matched masters by that address: it
// matched none and returned at once, the writes acknowledged unreplicated.
// With a master's only replica frozen, Sync must fail for want of it.
func TestSyncWaitsByHostName(t *testing.T) {
	c := redistest.Require(t) // NB: its own cluster: a node is frozen
	ctx := context.Background()
	// NB: a name of this host that go-redis does not take for loopback
	// itself, as it does "localhost": the machine's own, where it
	// resolves to a loopback address (as a Debian host's does).
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if ips, err := net.LookupIP(name); err != nil || len(ips) == 0 || !ips[0].IsLoopback() {
		t.Skipf("this host's name %q does not resolve to a loopback address (%v, %v): no name to reach the local cluster by", name, ips, err)
	}
	var hosts []string
	for _, a := range c.Addrs {
		_, port, _ := strings.Cut(a, ":")
		hosts = append(hosts, net.JoinHostPort(name, port))
	}
	s, err := Open(ctx, "redis+cluster://"+strings.Join(hosts, ",")+"/byname")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 20 {
		if _, err := s.Apply(ctx, &WriteSet{Puts: []Put{randomPut(rng, fmt.Sprint("doc", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatalf("Sync with every replica up: %v", err)
	}
	master := redis.NewClient(&redis.Options{Addr: c.Addrs[0]})
	defer master.Close()
	replica := replicaOf(t, c, master)
	// NB: well within the cluster's node timeout (2 s), after which the
	// frozen replica counts as failed and its master as alone.
	if err := c.Pause(replica); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Sync(ctx, 500*time.Millisecond)
	took := time.Since(start)
	if err := c.Resume(replica); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Sync with %s's only replica frozen, through host names: %v after %v; want ErrNotReplicated", c.Addrs[0], err, took)
	}
}

// Ensure that a document retired as its TTL runs out is counted once in
// the live count, whoever meets it first: Redis's expiry of its record
// between a write's swap of its id and its mark (the write's ZREM took
// the expiry entry, so the sweep never counted it, and neither did the
// write: the count stayed one too high), or a sweep between the write's
// mark and its ZREM (both counted it: one too low). The oracle: the
// count, against the documents held (none), and Check.
func TestRetireAsTTLRunsOut(t *testing.T) {
	ctx := context.Background()
	for _, step := range []string{"mark", "unpost"} {
		t.Run(step, func(t *testing.T) {
			s := open(t)
			rng := rand.New(rand.NewPCG(5, 6))
			p := randomPut(rng, "a")
			due := time.Now().Add(300 * time.Millisecond)
			p.Expires = due.UnixNano()
			if _, err := s.Apply(ctx, &WriteSet{Puts: []Put{p}}); err != nil {
				t.Fatal(err)
			}
			retireHook = func(at string) {
				if at != step {
					return
				}
				time.Sleep(time.Until(due) + 50*time.Millisecond) // the record expires
				if step == "unpost" {
					if _, err := s.Sweep(ctx, time.Now().UnixNano(), 64); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { retireHook = nil }()
			if _, err := s.Apply(ctx, &WriteSet{Deletes: []string{"a"}}); err != nil {
				t.Fatal(err)
			}
			retireHook = nil
			if _, err := s.Sweep(ctx, time.Now().UnixNano(), 64); err != nil {
				t.Fatal(err)
			}
			if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
				t.Errorf("check: %q, %v", rep.Problems, err)
			}
			// NB: the counter as stored: Counters reads a negative one as 0.
			if live, err := s.c.HGet(ctx, s.countersKey(), "live").Result(); err != nil || live != "0" {
				t.Errorf("live count %s (%v), want 0", live, err)
			}
		})
	}
}

// Ensure that a write whose pipeline go-redis sends again (its answer
// came after the read timeout) finds its own records, not another's: the
// records' check that no record holds their number failed on them, and
// the write said Redis had lost writes. The oracle: the counters, which
// went back in no way, and the documents written. (A maintainer's review
// wrote the proxy.)
func TestPutPipelineSentAgain(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	// A proxy that, once armed, holds back the answer of the records'
	// pipeline (four 1s) past the client's read timeout.
	paddr, arm := holdingProxy(t, startServer(t), ":1\r\n:1\r\n:1\r\n:1\r\n")
	s := storeAt(t, paddr, "lshdb:resent:", 300*time.Millisecond)
	ctx := context.Background()
	var ws WriteSet
	for i := range 4 {
		ws.Puts = append(ws.Puts, Put{ID: fmt.Sprint("id", i), Record: []byte(fmt.Sprint("r", i)), Buckets: []uint64{1, 2}})
	}
	if err := s.c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	arm.Store(1)
	if _, err := s.Apply(ctx, &ws); err != nil {
		t.Fatalf("a write whose records' pipeline was sent again: %v", err)
	}
	if arm.Load() != 0 {
		t.Fatal("the proxy held back no answer: the premise of this test does not hold")
	}
	nums, err := s.DocNums(ctx, []string{"id0", "id1", "id2", "id3"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Records(ctx, nums)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r == nil || string(r) != fmt.Sprint("r", i) {
			t.Errorf("id%d: record %q, want r%d", i, r, i)
		}
	}
}

// Ensure that a repair after the counters went back lets every handle
// write at once (the one that ran it too), and that an expiry entry not
// yet due whose record was lost with the counters is removed and its
// number never given out again: the sweep, once it came due, deleted the
// record of the document given its number. (A maintainer's review wrote
// both cases.) The oracle: the documents written, read back.
func TestRepairAfterCountersWentBack(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	due := time.Now().Add(1500 * time.Millisecond)
	var ws WriteSet
	for i := range 20 {
		ws.Puts = append(ws.Puts, Put{ID: fmt.Sprint("id", i), Record: []byte("r"), Buckets: []uint64{1, 2}})
	}
	if _, err := s.Apply(ctx, &ws); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, &WriteSet{Deletes: []string{"id15", "id16", "id17", "id18", "id19"}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(ctx, &WriteSet{Puts: []Put{{ID: "a", Record: []byte("ra"), Buckets: []uint64{3, 4}, Expires: due.UnixNano()}}})
	if err != nil {
		t.Fatal(err)
	}
	// Lost with the counters: a's record (its expiry entry kept).
	s.c.Del(ctx, s.docKey(res.Nums[0]))
	s.c.HSet(ctx, s.countersKey(), "next", 0)
	rep, err := s.Repair(ctx)
	if err != nil || !rep.Counters {
		t.Fatalf("repair: %+v, %v; want the counters put right", rep, err)
	}
	for i := range 5 {
		if _, err := s.Apply(ctx, &WriteSet{Puts: []Put{{ID: fmt.Sprint("new", i), Record: []byte(fmt.Sprint("n", i)), Buckets: []uint64{3, 4}}}}); err != nil {
			t.Fatalf("a write after the repair, on the handle that ran it: %v", err)
		}
	}
	time.Sleep(time.Until(due) + 100*time.Millisecond)
	if _, err := s.Sweep(ctx, time.Now().UnixNano(), 64); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		nums, err := s.DocNums(ctx, []string{fmt.Sprint("new", i)})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := s.Records(ctx, nums)
		if err != nil || recs[0] == nil || string(recs[0]) != fmt.Sprint("n", i) {
			t.Errorf("new%d (doc %d) after the sweep: %q %v", i, nums[0], recs[0], err)
		}
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Errorf("check: %q, %v", rep.Problems, err)
	}
}

// holdingProxy starts a proxy to the Redis server at addr that, while its
// arm is above 0, holds back each answer that begins with prefix for a
// second (past a client's read timeout of less: go-redis then sends the
// pipeline again), taking one off arm for each.
func holdingProxy(t *testing.T, addr, prefix string) (string, *atomic.Int32) {
	t.Helper()
	arm := new(atomic.Int32)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	go func() {
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(r, c); r.Close() }()
			go func() {
				defer c.Close()
				defer r.Close()
				buf := make([]byte, 1<<16)
				for {
					n, err := r.Read(buf)
					if n > 0 {
						if strings.HasPrefix(string(buf[:n]), prefix) && takeOne(arm) {
							time.Sleep(time.Second)
						}
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return pl.Addr().String(), arm
}

// Ensure that a retirement or a sweep whose pipeline go-redis sent again
// (its answer held back past the read timeout) counts what the first send
// did, and that the sweep removes what it claimed. Without the tokens
// (markScript, claimScript), the marks sent again answered 0, and the
// live count stayed at 4 after the 4 documents were deleted; the sweep's
// claims sent again answered 0, and it left the postings and the count of
// the 4 documents it had taken from the expiry index. The oracle: the
// documents written, and a Check of the store.
func TestRetireSentAgain(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	addr := startServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ttl  bool
	}{{"delete", false}, {"sweep", true}} {
		t.Run(tc.name, func(t *testing.T) {
			paddr, arm := holdingProxy(t, addr, ":1\r\n:1\r\n:1\r\n:1\r\n")
			s := storeAt(t, paddr, "lshdb:"+tc.name+":", 300*time.Millisecond)
			if err := s.c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			var ws WriteSet
			var due time.Time
			for i := range 4 {
				p := Put{ID: fmt.Sprint("id", i), Record: []byte(fmt.Sprint("r", i)), Buckets: []uint64{uint64(10 + i), uint64(20 + i)}}
				if tc.ttl {
					due = time.Now().Add(200 * time.Millisecond)
					p.Expires = due.UnixNano()
				}
				ws.Puts = append(ws.Puts, p)
			}
			if _, err := s.Apply(ctx, &ws); err != nil {
				t.Fatal(err)
			}
			arm.Store(1)
			if tc.ttl {
				time.Sleep(time.Until(due) + 50*time.Millisecond)
				n, err := s.Sweep(ctx, time.Now().UnixNano(), 100)
				if err != nil || n != 4 {
					t.Fatalf("Sweep = %d, %v; want the 4 documents due", n, err)
				}
			} else {
				res, err := s.Apply(ctx, &WriteSet{Deletes: []string{"id0", "id1", "id2", "id3"}})
				if err != nil || len(res.Missing) != 0 {
					t.Fatalf("delete: %+v, %v", res, err)
				}
			}
			if arm.Load() != 0 {
				t.Fatal("the proxy held back no answer: the premise of this test does not hold")
			}
			if n, err := s.Count(ctx); err != nil || n != 0 {
				t.Errorf("live count %d, %v after the 4 documents went; want 0", n, err)
			}
			for i := range 4 {
				for band, b := range ws.Puts[i].Buckets {
					if n, err := s.c.SCard(ctx, s.postKey(band, b)).Result(); err != nil || n != 0 {
						t.Errorf("posting list of band %d bucket %d holds %d, %v; want none", band, b, n, err)
					}
				}
			}
		})
	}
}

// Ensure that a write whose id swaps go-redis sent again (their answer
// held back past the read timeout) retires what the first send swapped
// out: the documents it replaced or deleted are gone, their postings
// too, the live count is right, and a delete reports no id missing.
// Without swapScript's memory, the second send's SET … GET answered the
// write's own numbers and GETDEL nothing: the replaced documents stayed
// as orphans (Check reported them), the deleted ones stayed stored, and
// the delete reported its 4 ids missing. The oracle: the documents
// written, and a Check of the store.
func TestSwapSentAgain(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	addr := startServer(t)
	ctx := context.Background()
	for _, del := range []bool{false, true} {
		name := map[bool]string{false: "replace", true: "delete"}[del]
		t.Run(name, func(t *testing.T) {
			// The swaps' answer: the four numbers that the ids named.
			paddr, arm := holdingProxy(t, addr, "$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n")
			s := storeAt(t, paddr, "lshdb:swap-"+name+":", 300*time.Millisecond)
			var ws, next WriteSet
			for i := range 4 {
				ws.Puts = append(ws.Puts, Put{ID: fmt.Sprint("id", i), Record: []byte(fmt.Sprint("old", i)), Buckets: []uint64{uint64(10 + i), uint64(20 + i)}})
				if del {
					next.Deletes = append(next.Deletes, fmt.Sprint("id", i))
				} else {
					next.Puts = append(next.Puts, Put{ID: fmt.Sprint("id", i), Record: []byte(fmt.Sprint("new", i)), Buckets: []uint64{uint64(30 + i), uint64(40 + i)}})
				}
			}
			if _, err := s.Apply(ctx, &ws); err != nil {
				t.Fatal(err)
			}
			arm.Store(1)
			res, err := s.Apply(ctx, &next)
			if err != nil || len(res.Missing) != 0 || !del && res.Replaced != 4 {
				t.Fatalf("the second write: %+v, %v; want 4 ids replaced or deleted, none missing", res, err)
			}
			if arm.Load() != 0 {
				t.Fatal("the proxy held back no answer: the premise of this test does not hold")
			}
			want := 4
			if del {
				want = 0
			}
			if n, err := s.Count(ctx); err != nil || n != uint64(want) {
				t.Errorf("live count %d, %v; want %d", n, err, want)
			}
			for i, p := range ws.Puts {
				for band, b := range p.Buckets {
					if n, err := s.c.SCard(ctx, s.postKey(band, b)).Result(); err != nil || n != 0 {
						t.Errorf("the replaced or deleted id%d's posting list of band %d holds %d, %v; want none", i, band, n, err)
					}
				}
			}
			nums, err := s.DocNums(ctx, []string{"id0", "id1", "id2", "id3"})
			if err != nil {
				t.Fatal(err)
			}
			recs, err := s.Records(ctx, nums)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				if del && (nums[i] != 0 || r != nil) || !del && string(r) != fmt.Sprint("new", i) {
					t.Errorf("id%d: number %d record %q after the second write", i, nums[i], r)
				}
			}
			if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
				t.Errorf("Check: %+v, %v; want no problem", rep, err)
			}
			// The swaps are kept until the write is over (Finished), and
			// go with the next write.
			if keys, err := s.c.Keys(ctx, "*swaps*").Result(); err != nil || len(keys) == 0 {
				t.Errorf("the write kept no swaps before it is over: %q, %v", keys, err)
			}
			s.Finished(res.Attempt)
			if _, err := s.Apply(ctx, &WriteSet{Puts: []Put{{ID: "later", Record: []byte("later"), Buckets: []uint64{50, 60}}}}); err != nil {
				t.Fatal(err)
			}
			if keys, err := s.c.Keys(ctx, "*swaps*").Result(); err != nil || len(keys) > 0 {
				t.Errorf("the write over, the next left its swaps: %q, %v", keys, err)
			}
		})
	}
}

// Ensure that Sync does not take a master for alone when its replica's
// link is down but the cluster still lists the replica (frozen, cut off):
// that replica is promoted if the master fails, and a write the master
// acknowledged alone is lost. Both before the node timeout and after it
// (the replica then counts as failed), Sync must fail with
// ErrNotReplicated. On the old code, INFO's connected_slaves:0 made the
// master alone: a review lost 18 and 48 acknowledged writes so (RC1).
func TestSyncReplicaCutOff(t *testing.T) {
	c := redistest.Require(t) // NB: its own cluster: a node is frozen
	ctx := context.Background()
	s, err := Open(ctx, "redis+cluster://"+strings.Join(c.Addrs, ",")+"/cutoff")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var alone atomic.Int32
	s.Unreplicated = func(string) { alone.Add(1) }
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatalf("Sync with every replica up: %v", err)
	}
	master := redis.NewClient(&redis.Options{Addr: c.Addrs[0]})
	defer master.Close()
	replica := replicaOf(t, c, master)
	if err := c.Pause(replica); err != nil {
		t.Fatal(err)
	}
	defer c.Resume(replica)
	if err := master.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	if info, err := master.Info(ctx, "replication").Result(); err != nil || !strings.Contains(info, "connected_slaves:0") {
		t.Fatalf("the replica's link is not down: the premise of this test does not hold: %v %s", err, info)
	}
	for _, when := range []string{"before", "at once after", "after"} {
		if when == "after" {
			time.Sleep(3 * time.Second) // past the node timeout (2 s)
		}
		start := time.Now()
		err := s.Sync(ctx, 300*time.Millisecond)
		if !errors.Is(err, ErrNotReplicated) || !strings.Contains(err.Error(), c.Addrs[0]) || !strings.Contains(err.Error(), c.Addrs[replica]) {
			t.Errorf("Sync with %s's replica cut off, %s the node timeout: %v; want ErrNotReplicated naming the master and its replica %s", c.Addrs[0], when, err, c.Addrs[replica])
		}
		// NB: the write after a failed one fails at once, not after the
		// whole timeout.
		if took := time.Since(start); when == "at once after" && took > 200*time.Millisecond {
			t.Errorf("a second Sync with the replica cut off took %v; want it to fail at once", took)
		}
	}
	if n := alone.Load(); n != 0 {
		t.Errorf("%d masters were said to acknowledge alone; want none", n)
	}
}

// replicaOf returns the index in c.Addrs of a replica of master, as
// master's INFO replication lists it.
func replicaOf(t *testing.T, c *redistest.Cluster, master *redis.Client) int {
	t.Helper()
	info, err := master.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rport, ok := strings.Cut(info, "slave0:ip=127.0.0.1,port=")
	rport, _, _ = strings.Cut(rport, ",")
	replica := slices.Index(c.Addrs, "127.0.0.1:"+rport)
	if !ok || replica < 0 {
		t.Fatalf("no replica of %s among %v: %s", master.Options().Addr, c.Addrs, info)
	}
	return replica
}

// Ensure that a replica connected and in sync that is only slow to
// acknowledge (stalled: here, stopped for less than the cluster's node
// timeout) is waited for past Sync's timeout, up to slowReplicaWaits of
// them, and that one stalled longer fails with ErrNotReplicated saying
// it is connected but stalled. On the old code a write failed after the
// first timeout, saying the replica "is not connected" (an operator's
// review of Redis, RD2: a replica's own AOF rewrite failed inserts).
// The oracle: the replica's link state, read from its master, and the
// time the stall lasted.
func TestSyncSlowReplica(t *testing.T) {
	c := redistest.Require(t) // NB: its own cluster: a node is frozen
	ctx := context.Background()
	s, err := Open(ctx, "redis+cluster://"+strings.Join(c.Addrs, ",")+"/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatalf("Sync with every replica up: %v", err)
	}
	master := redis.NewClient(&redis.Options{Addr: c.Addrs[0]})
	defer master.Close()
	replica := replicaOf(t, c, master)
	const timeout = 300 * time.Millisecond
	for _, stall := range []time.Duration{800 * time.Millisecond, 0} {
		// stall 0: stopped until the Sync ends.
		if err := c.Pause(replica); err != nil {
			t.Fatal(err)
		}
		if info, err := master.Info(ctx, "replication").Result(); err != nil || !strings.Contains(info, "state=online") {
			t.Fatalf("the stopped replica's link is not up: the premise of this test does not hold: %v %s", err, info)
		}
		resumed := make(chan struct{})
		if stall > 0 {
			go func() {
				time.Sleep(stall)
				c.Resume(replica)
				close(resumed)
			}()
		}
		start := time.Now()
		err := s.Sync(ctx, timeout)
		took := time.Since(start)
		if stall > 0 {
			<-resumed
			if err != nil {
				t.Errorf("Sync with the replica stalled %v, with a timeout of %v: %v after %v; want it acknowledged once the replica caught up", stall, timeout, err, took)
			}
			if took < stall-100*time.Millisecond {
				t.Errorf("Sync with the replica stalled %v returned after %v: the replica was not stopped, and the premise of this test does not hold", stall, took)
			}
			continue
		}
		// NB: a write right after the failed one fails at once, with the
		// failed one's words: it said "not connected ... within 0s" (a
		// read-through's R2).
		start = time.Now()
		again := s.Sync(ctx, timeout)
		if took := time.Since(start); !errors.Is(again, ErrNotReplicated) || !strings.Contains(again.Error(), "connected but did not acknowledge") || !strings.Contains(again.Error(), "this one was not waited for") || took > timeout {
			t.Errorf("Sync right after the failed one: %v after %v; want it failed at once with the failed one's words", again, took)
		}
		c.Resume(replica)
		if !errors.Is(err, ErrNotReplicated) || !strings.Contains(err.Error(), "connected but did not acknowledge") || !strings.Contains(err.Error(), c.Addrs[replica]) {
			t.Errorf("Sync with the replica stopped: %v; want ErrNotReplicated saying its replica %s is connected but stalled", err, c.Addrs[replica])
		}
		if took < slowReplicaWaits*timeout-50*time.Millisecond || took > slowReplicaWaits*timeout+2*time.Second {
			t.Errorf("Sync with the replica stopped failed after %v; want about %v", took, slowReplicaWaits*timeout)
		}
	}
}

// Ensure that Repair removes an id that names another id's record (a
// number given out again after Redis lost the counters, the first id's
// key kept on a node that did not lose it), and lists it as lost: it kept
// such an id, as one naming a live record, and Check failed after every
// repair (RC2); Live listed the record under both ids, so a scan gave it
// twice and pairs paired it with itself. The oracle: Check, before and
// after, and the ids read back.
func TestRepairIDOfAnotherRecord(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	res, err := s.Apply(ctx, &WriteSet{Puts: []Put{randomPut(rng, "a"), randomPut(rng, "c")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.Set(ctx, s.idKey("b"), res.Nums[0], 0).Err(); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Check(ctx, 0); err != nil || !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, `"b"`) }) {
		t.Fatalf("Check: %+v, %v; want the id b naming a's record", rep, err)
	}
	// Until the repair, the listing of the live documents (scans, pairs)
	// gives the record once, under its own id.
	if live, err := s.Live(ctx); err != nil || !slices.Equal(live, []IDNum{{"a", res.Nums[0]}, {"c", res.Nums[1]}}) {
		t.Errorf("Live: %v, %v; want a and c, each once", live, err)
	}
	rep, err := s.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Lost, []string{"b"}) {
		t.Errorf("Repair lost %q; want [b]", rep.Lost)
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Errorf("Check after the repair: %+v, %v; want no problem", rep, err)
	}
	nums, err := s.DocNums(ctx, []string{"a", "b", "c"})
	if err != nil || nums[0] != res.Nums[0] || nums[1] != 0 || nums[2] != res.Nums[1] {
		t.Errorf("ids a, b, c name %v, %v; want %d, none, %d", nums, err, res.Nums[0], res.Nums[1])
	}
	if n, err := s.Count(ctx); err != nil || n != 2 {
		t.Errorf("live count %d, %v; want 2", n, err)
	}
}

// Ensure that a sweep whose count fails (the counters' master failing
// over; here the counters key made of the wrong type) leaves its
// documents for the next sweep, which counts them: claimed first and
// counted after, they were lost to every later sweep, and the live count
// stayed 4 too high until a repair (RC3). The oracle: the count against
// the documents held (none), their postings, and Check.
func TestSweepCountFails(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	due := time.Now().Add(200 * time.Millisecond)
	ws := applyExpiring(t, s, rng, 4, due)
	counters, err := s.c.HGetAll(ctx, s.countersKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.Del(ctx, s.countersKey()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Set(ctx, s.countersKey(), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(due) + 50*time.Millisecond)
	if n, err := s.Sweep(ctx, time.Now().UnixNano(), 100); err == nil {
		t.Fatalf("Sweep with the counters unwritable: %d, no error", n)
	}
	if err := s.c.Del(ctx, s.countersKey()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HSet(ctx, s.countersKey(), counters).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx, time.Now().UnixNano(), 100); err != nil || n != 4 {
		t.Errorf("the next Sweep: %d, %v; want the 4 documents counted", n, err)
	}
	if n, err := s.Count(ctx); err != nil || n != 0 {
		t.Errorf("live count %d, %v; want 0", n, err)
	}
	for _, p := range ws.Puts {
		for band, b := range p.Buckets {
			if n, err := s.c.SCard(ctx, s.postKey(band, b)).Result(); err != nil || n != 0 {
				t.Errorf("%s's posting list of band %d holds %d, %v; want none", p.ID, band, n, err)
			}
		}
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Errorf("Check: %+v, %v; want no problem", rep, err)
	}
}

// Ensure that a write's count that go-redis sent again (its answer held
// back past the read timeout) counts once: HINCRBY sent again counted the
// write's 4 documents twice. The oracle: the documents written.
func TestCountSentAgain(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	// The count's answer after the write below: 9 documents and 4 more
	// (the next number answers 14).
	paddr, arm := holdingProxy(t, startServer(t), ":13\r\n")
	s := storeAt(t, paddr, "lshdb:count:", 300*time.Millisecond)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 4))
	var ws WriteSet
	for i := range 10 {
		ws.Puts = append(ws.Puts, randomPut(rng, fmt.Sprint("doc", i)))
	}
	if _, err := s.Apply(ctx, &ws); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, &WriteSet{Deletes: []string{"doc0"}}); err != nil {
		t.Fatal(err)
	}
	ws = WriteSet{}
	for i := range 4 {
		ws.Puts = append(ws.Puts, randomPut(rng, fmt.Sprint("new", i)))
	}
	arm.Store(1)
	if _, err := s.Apply(ctx, &ws); err != nil {
		t.Fatal(err)
	}
	if arm.Load() != 0 {
		t.Fatal("the proxy held back no answer: the premise of this test does not hold")
	}
	if n, err := s.Count(ctx); err != nil || n != 13 {
		t.Errorf("live count %d, %v; want 13", n, err)
	}
}

// Ensure that Sync waits on a master through a slot range that is not
// being migrated: it took each master's first range, and a master whose
// first range was a single slot moving away (a reshard moves one slot at a
// time, and leaves single slots in the masters' lists) got ASK for every
// key it tried, and a write that was applied was reported failed (RC4).
// Here slot 0 is moved to the second master, then begins to move back.
func TestSyncPastMigratingSlot(t *testing.T) {
	c := redistest.Require(t) // NB: its own cluster: slots are moved
	ctx := context.Background()
	node := func(addr string) *redis.Client {
		cl := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	// shardsOf returns the shards as node a sees them: each one's master,
	// its first slot, and whether slot 0 is a range of its own.
	type shard struct {
		master string
		first  int64 // its first slot
		alone0 bool  // slot 0 is a range of its own
	}
	shardsOf := func(a string) []shard {
		shards, err := node(a).ClusterShards(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []shard
		for _, sh := range shards {
			x := shard{first: -1}
			for _, n := range sh.Nodes {
				if n.Role == "master" {
					x.master = net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				}
			}
			for _, r := range sh.Slots {
				if x.first < 0 || r.Start < x.first {
					x.first = r.Start
				}
				x.alone0 = x.alone0 || r.Start == 0 && r.End == 0
			}
			if x.master != "" && x.first >= 0 {
				out = append(out, x)
			}
		}
		return out
	}
	var owner, other *redis.Client
	for _, sh := range shardsOf(c.Addrs[0]) {
		switch {
		case sh.first == 0:
			owner = node(sh.master)
		case other == nil:
			other = node(sh.master)
		}
	}
	if owner == nil || other == nil {
		t.Fatalf("no two masters, one of slot 0: %+v", shardsOf(c.Addrs[0]))
	}
	ownerID, err := owner.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	otherID, err := other.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	setslot := func(cl *redis.Client, args ...any) {
		t.Helper()
		if err := cl.Do(ctx, append([]any{"CLUSTER", "SETSLOT", 0}, args...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Slot 0 to the other master, whose first range it then is.
	setslot(other, "IMPORTING", ownerID)
	setslot(owner, "MIGRATING", otherID)
	setslot(other, "NODE", otherID)
	setslot(owner, "NODE", otherID)
	deadline := time.Now().Add(20 * time.Second)
	for {
		agreed := true
		for _, a := range c.Addrs {
			ok := false
			for _, sh := range shardsOf(a) {
				ok = ok || sh.alone0 && sh.master == other.Options().Addr
			}
			agreed = agreed && ok
		}
		if agreed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the nodes do not agree that slot 0 moved")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// And on its way back.
	setslot(owner, "IMPORTING", otherID)
	setslot(other, "MIGRATING", ownerID)
	s, err := Open(ctx, "redis+cluster://"+strings.Join(c.Addrs, ",")+"/migrating")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Sync(ctx, 2*time.Second); err != nil {
		t.Fatalf("Sync with slot 0 migrating: %v", err)
	}
}

// takeOne takes one off n if it is above 0, and reports whether it did.
func takeOne(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// Ensure that a sweep whose count ran but whose answer was lost through
// every go-redis try counts once: it is sent again with its token, not
// put back for the next sweep, which counted the documents again (a
// maintainer's review: 6 live where 10 are). The oracle: the documents
// written (14, of which 4 expired).
func TestSweepCountAnswerLost(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	// The count's answer (14 documents less the 4 swept), held on its
	// first send and each of go-redis's 3 retries.
	paddr, arm := holdingProxy(t, startServer(t), ":10\r\n")
	s := storeAt(t, paddr, "lshdb:sweepcount:", 300*time.Millisecond)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 3))
	var ws WriteSet
	due := time.Now().Add(200 * time.Millisecond)
	for i := range 14 {
		p := randomPut(rng, fmt.Sprint("doc", i))
		if i < 4 {
			p.Expires = due.UnixNano()
		}
		ws.Puts = append(ws.Puts, p)
	}
	if _, err := s.Apply(ctx, &ws); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(due) + 50*time.Millisecond)
	arm.Store(4)
	n, err := s.Sweep(ctx, time.Now().UnixNano(), 100)
	if arm.Load() != 0 {
		t.Fatalf("the proxy held back %d answers of 4: the premise of this test does not hold", 4-arm.Load())
	}
	if err != nil || n != 4 {
		t.Errorf("the sweep: %d, %v; want the 4 documents counted", n, err)
	}
	if n, err := s.Sweep(ctx, time.Now().UnixNano(), 100); err != nil || n != 0 {
		t.Errorf("the next sweep: %d, %v; want nothing left", n, err)
	}
	if c, err := s.Count(ctx); err != nil || c != 10 {
		t.Errorf("live count %d, %v; want 10", c, err)
	}
}

// Ensure that Repair removes an expiry entry that no write makes (one
// added by hand), which the sweep leaves and reports: every sweep failed
// on it, after a repair too (a maintainer's review).
func TestRepairRemovesForeignExpiryEntry(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.c.ZAdd(ctx, s.expiryKey(), redis.Z{Score: 0, Member: "not-a-member"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sweep(ctx, time.Now().UnixNano(), 100); err == nil {
		t.Fatal("Sweep with a foreign expiry entry: no error")
	}
	if _, err := s.Repair(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx, time.Now().UnixNano(), 100); err != nil || n != 0 {
		t.Errorf("Sweep after the repair: %d, %v; want nothing, no error", n, err)
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Errorf("Check after the repair: %+v, %v", rep, err)
	}
}

// Ensure that Flush (Drop) leaves no key of the index behind, the keys
// of the writes' tokens included (counted marks, swaps, claims), which
// are outside the index's prefix (a maintainer's review). The oracle:
// the server's own count of its keys.
func TestFlushLeavesNothing(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	s := storeAt(t, startServer(t), "lshdb:flush:", 0)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2, 2))
	var ws WriteSet
	for i := range 20 {
		p := randomPut(rng, fmt.Sprint("doc", i))
		if i%2 == 0 {
			p.Expires = time.Now().Add(time.Hour).UnixNano()
		}
		ws.Puts = append(ws.Puts, p)
	}
	for range 2 { // the second replaces the first
		if _, err := s.Apply(ctx, &ws); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Apply(ctx, &WriteSet{Deletes: []string{"doc1", "doc2"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.c.DBSize(ctx).Result(); err != nil || n == 0 {
		t.Fatalf("DBSIZE %d, %v after the writes", n, err)
	}
	if _, err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.c.Keys(ctx, "*").Result(); err != nil || len(keys) > 0 {
		t.Errorf("after Flush: %q, %v; want no key", keys, err)
	}
}

// Ensure that writes go on whole when the servers forget the scripts
// (SCRIPT FLUSH, as a restart or a failover to a replica that never ran
// them does): a pipeline of EVALSHA answered NOSCRIPT is sent again with
// the scripts' bodies (scripted). The oracle: the documents written, read
// back, the live count, and Check.
func TestScriptsForgotten(t *testing.T) {
	if cluster == nil {
		t.Skip("no redis-server (LSHDB_REQUIRE_REDIS=1 makes this a failure)")
	}
	s := storeAt(t, startServer(t), "lshdb:noscript:", 0)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(6, 6))
	var ws WriteSet
	for i := range 10 {
		ws.Puts = append(ws.Puts, randomPut(rng, fmt.Sprint("doc", i)))
	}
	for step := range 3 { // put, replace, delete half, each after a flush
		if err := s.c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		w := ws
		if step == 2 {
			w = WriteSet{Deletes: []string{"doc0", "doc1", "doc2", "doc3", "doc4"}}
		}
		if _, err := s.Apply(ctx, &w); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if n, err := s.Count(ctx); err != nil || n != 5 {
		t.Errorf("live count %d, %v; want 5", n, err)
	}
	nums, err := s.DocNums(ctx, []string{"doc5", "doc9"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.Records(ctx, nums)
	if err != nil || string(recs[0]) != string(ws.Puts[5].Record) || string(recs[1]) != string(ws.Puts[9].Record) {
		t.Errorf("doc5 and doc9 read %q, %v", recs, err)
	}
	if rep, err := s.Check(ctx, 0); err != nil || len(rep.Problems) > 0 {
		t.Errorf("Check: %+v, %v", rep, err)
	}
}

// storeAt returns a store of the index prefix on the single server at
// addr, with the client's read timeout (0: go-redis's), closed when the
// test ends.
func storeAt(t *testing.T, addr, prefix string, readTimeout time.Duration) *Store {
	t.Helper()
	s := &Store{c: redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: readTimeout}), prefix: prefix}
	t.Cleanup(func() { s.Close() })
	return s
}

// Ensure that slotOf is the cluster's own slot of a key (CLUSTER
// KEYSLOT) for the manifest's keys, hash tags included, and that the manifest and its copies lie
// in three different thirds of the slots: on the test cluster's three
// masters, each on its own.
func TestManifestCopiesSlots(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	cc := s.c.(*redis.ClusterClient)
	for _, k := range []string{"", "a", "lshdb:x:manifest", "{lshdb:x}:counters", "{}x", "a{b}c", "a{}b{c}", "{lshdb:x:manifest:3}:copy", "ünïcode", "123456789"} {
		want, err := cc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := slotOf(k); int64(got) != want {
			t.Errorf("slotOf(%q) = %d, the cluster says %d", k, got, want)
		}
	}
	for _, name := range []string{"a", "mydocs", "TestX", "idx-0"} {
		keys := ManifestKeys(name)
		thirds := map[int]bool{}
		for _, k := range keys {
			thirds[slotThird(slotOf(k))] = true
		}
		if len(keys) != 1+manifestCopies || len(thirds) != 3 {
			t.Errorf("%s: the manifest's keys %v lie in %d thirds of the slots, want 3", name, keys, len(thirds))
		}
		masters := map[string]bool{}
		for _, k := range keys {
			c, err := cc.MasterForKey(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			masters[c.Options().Addr] = true
		}
		if len(masters) != 3 {
			t.Errorf("%s: the manifest's keys are on %d masters, want 3", name, len(masters))
		}
	}
}

// Ensure that a manifest lost alone (its master restarted empty) is
// read from a copy and put back, that CreateManifest writes the copies,
// SetManifest updates them, CopyManifest makes the missing ones, and Drop
// removes them all: the model is the bytes written.
func TestManifestCopies(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	defer s.Drop(ctx)
	name := strings.TrimSuffix(strings.TrimPrefix(s.prefix, "lshdb:"), ":")
	keys := ManifestKeys(name)
	get := func(k string) string {
		v, err := s.c.Get(ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			return "<none>"
		} else if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if created, err := s.CreateManifest(ctx, []byte("m1")); err != nil || !created {
		t.Fatalf("CreateManifest: %v, %v", created, err)
	}
	for _, k := range keys {
		if v := get(k); v != "m1" {
			t.Fatalf("%s after CreateManifest: %q", k, v)
		}
	}
	if err := s.SetManifest(ctx, []byte("m2")); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Del(ctx, keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Manifest(ctx); err != nil || string(m) != "m2" {
		t.Fatalf("Manifest with the manifest lost: %q, %v; want the copy, m2", m, err)
	}
	if v := get(keys[0]); v != "m2" {
		t.Fatalf("the manifest after a read from its copy: %q, want it put back", v)
	}
	for _, k := range keys[1:] {
		if err := s.c.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CopyManifest(ctx, []byte("m2")); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if v := get(k); v != "m2" {
			t.Fatalf("%s after CopyManifest: %q", k, v)
		}
	}
	if err := s.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if v := get(k); v != "<none>" {
			t.Fatalf("%s after Drop: %q", k, v)
		}
	}
	if m, err := s.Manifest(ctx); err != nil || m != nil {
		t.Fatalf("Manifest after Drop: %q, %v", m, err)
	}
}

// Ensure that SweepCounted tells each batch's count as it commits, and
// that they add up to what it returns (the metrics of a long sweep count
// by them: a TTL review's TTL-3). 10 documents in batches of 4: 4, 4, 2.
func TestSweepCountedTellsEachBatch(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 8))
	due := time.Now().Add(200 * time.Millisecond)
	applyExpiring(t, s, rng, 10, due)
	time.Sleep(time.Until(due) + 50*time.Millisecond)
	var told []int
	n, err := s.SweepCounted(ctx, time.Now().UnixNano(), 4, func(k int) { told = append(told, k) })
	if err != nil || n != 10 || !slices.Equal(told, []int{4, 4, 2}) {
		t.Fatalf("SweepCounted: %d, %v, told %v; want 10 in batches of 4, 4, 2", n, err, told)
	}
	if live, err := s.Count(ctx); err != nil || live != 0 {
		t.Fatalf("live count %d, %v; want 0", live, err)
	}
}

// applyExpiring writes n random documents (doc0, doc1, …) that expire at
// due, and returns their write.
func applyExpiring(t *testing.T, s *Store, rng *rand.Rand, n int, due time.Time) WriteSet {
	t.Helper()
	var ws WriteSet
	for i := range n {
		p := randomPut(rng, fmt.Sprint("doc", i))
		p.Expires = due.UnixNano()
		ws.Puts = append(ws.Puts, p)
	}
	if _, err := s.Apply(context.Background(), &ws); err != nil {
		t.Fatal(err)
	}
	return ws
}
