package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lshdb/lshdb/minhash"
)

// Ensure that humanBytes writes sizes in binary units as a person would by
// hand, rounding to one decimal and carrying into the next unit.
func TestHumanBytes(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0 B"}, {1, "1 B"}, {1023, "1023 B"},
		{1024, "1.0 KiB"}, {1536, "1.5 KiB"}, // 1536 = 1.5 × 1024
		{10*1024 + 102, "10.1 KiB"}, // 10342 / 1024 = 10.0996
		{1024*1024 - 1, "1.0 MiB"},  // 1023.999 KiB rounds to 1024.0: carried
		{1 << 20, "1.0 MiB"}, {3 << 29, "1.5 GiB"},
		{1788914308, "1.7 GiB"}, // C24's index: 1788914308 / 2^30 = 1.666
		{1 << 40, "1.0 TiB"}, {1<<64 - 1, "16.0 EiB"},
	} {
		if got := humanBytes(c.n); got != c.want {
			t.Errorf("humanBytes(%d) = %q; want %q", c.n, got, c.want)
		}
	}
}

// Ensure that info reports what stats reports of the same index (count,
// parameters, bytes on disk) and that its text shows the size in human
// units of that byte count.
func TestInfoAgreesWithStats(t *testing.T) {
	dir := fixture(t)
	out, errOut, code := runLine([]string{"info", "--db", dir, "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("info: %d %s", code, errOut)
	}
	var in infoJSON
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runLine([]string{"stats", "--db", dir, "--output", "json"}, "")
	if code != 0 {
		t.Fatalf("stats: %d %s", code, errOut)
	}
	var st statsJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	// docs.jsonl holds 6 records with distinct ids.
	if in.Docs != 6 || st.Docs != 6 {
		t.Errorf("info says %d documents, stats %d; the input has 6", in.Docs, st.Docs)
	}
	if in.Threshold != st.Threshold || in.Bands != st.Bands || in.Rows != st.Rows || in.NumPerm != st.NumPerm ||
		in.Scheme != st.Scheme || in.Storage != st.Storage || in.FormatVersion != st.FormatVersion || in.ExpectedRecall != st.ExpectedRecall ||
		in.Instance == "" || in.Instance != st.Instance {
		t.Errorf("info %+v disagrees with stats %+v", in, st)
	}
	// NB: a read-only open (each command's) writes nothing: the same files.
	if in.DiskBytes != st.DiskBytes || in.DiskBytes == 0 {
		t.Errorf("info: %d bytes on disk, stats %d", in.DiskBytes, st.DiskBytes)
	}
	out, _, _ = runLine([]string{"info", "--db", dir}, "")
	if want := "size on disk: " + humanBytes(in.DiskBytes); !strings.Contains(out, want) {
		t.Errorf("info prints %q; want a line %q", out, want)
	}
}

// Ensure that get gives a document's shingle count on an index of storage
// none, which keeps no set (it printed 0, then "not stored": a shell
// user's review, I4), saying the set is not stored, and the count where a
// set or text is stored.
func TestGetShinglesByStorage(t *testing.T) {
	dir := t.TempDir()
	text := "the quick brown fox jumps over the lazy dog"
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(fmt.Sprintf("{\"id\":\"a\",\"text\":%q}\n", text)), 0o644); err != nil {
		t.Fatal(err)
	}
	// 43 characters, character 5-shingles (the default): 39 windows, no
	// two alike.
	for storage, want := range map[string][2]string{
		"none": {"shingles: 39 (the set itself is not stored: storage none)\n", `"shingles":39`},
		"sets": {"shingles: 39\n", `"shingles":39`},
		"text": {"shingles: 39\n", `"shingles":39`},
	} {
		idx := filepath.Join(dir, storage)
		mustRun(t, "create", "--db", idx, "--storage", storage)
		mustRun(t, "insert", "--db", idx, in)
		out, _ := mustRun(t, "get", "--db", idx, "a")
		if !strings.Contains(out, want[0]) {
			t.Errorf("storage %s: get printed %q, want %q", storage, out, want[0])
		}
		// The text's line only where the text is kept: a text index's
		// document whose text is "(not stored)" printed as a sets
		// index's document did (an inspection review's SH-4).
		if hasText := strings.Contains(out, "\ntext: "+text+"\n"); hasText != (storage == "text") || strings.Contains(out, "\ntext: ") != hasText {
			t.Errorf("storage %s: get printed %q: a text line %v", storage, out, hasText)
		}
		out, _ = mustRun(t, "get", "--db", idx, "a", "--output", "json")
		if !strings.Contains(out, want[1]) {
			t.Errorf("storage %s: get --output json printed %q, want %q", storage, out, want[1])
		}
	}
}

// Ensure that info --output json gives a killed build's temporary bytes
// as the text does (it gave disk_bytes only): the file's 50,000 bytes, in
// whole blocks of the file system.
func TestInfoJSONTempBytes(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "../../testdata/cmd/inputs/docs.jsonl"}, ""); code != 0 {
		t.Fatal(errOut)
	}
	os.MkdirAll(filepath.Join(idx, "lshdb-load.tmp"), 0o755)
	os.WriteFile(filepath.Join(idx, "lshdb-load.tmp", "000001.sst"), make([]byte, 50_000), 0o644)
	out, errOut, code := runLine([]string{"info", "--db", idx, "--output", "json"}, "")
	var got struct {
		DiskBytes uint64 `json:"disk_bytes"`
		TempBytes uint64 `json:"temp_bytes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.TempBytes < 50_000 || got.TempBytes > 50_000+1<<16 || got.DiskBytes <= got.TempBytes {
		t.Fatalf("info --output json: exit %d %s %s", code, out, errOut)
	}
	text, _, _ := runLine([]string{"info", "--db", idx}, "")
	if !strings.Contains(text, "of it temporary files") {
		t.Fatalf("info: %s", text)
	}
}

// Ensure that stats --top N lists the N largest posting lists: the first
// N of the list of every posting list (its --top as large as their
// count, which the per-band counts give), sizes largest first, each the
// count of members bucket prints; --top 0 lists none; in the shell too.
func TestStatsTop(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "idx")
	mustRun(t, "build", "--db", idx, "../../testdata/corpora/debian-sample/docs.jsonl")
	type hot struct {
		Band   int    `json:"band"`
		Bucket string `json:"bucket"`
		Size   int    `json:"size"`
		Also   []struct {
			Band   int    `json:"band"`
			Bucket string `json:"bucket"`
		} `json:"also"`
	}
	stats := func(top string) (lists int, hottest []hot) {
		out, _ := mustRun(t, "stats", "--db", idx, "--top", top, "--output", "json")
		var st struct {
			Lists   []int `json:"posting_lists_per_band"`
			Hottest []hot `json:"hottest"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("stats --top %s: %v: %s", top, err, out)
		}
		for _, n := range st.Lists {
			lists += n
		}
		return lists, st.Hottest
	}
	lists, _ := stats("0")
	_, all := stats(strconv.Itoa(lists))
	named := 0 // each entry names its lists of other bands in also
	for _, h := range all {
		named += 1 + len(h.Also)
	}
	if named != lists || lists < 100 {
		t.Fatalf("--top %d listed %d entries naming %d lists", lists, len(all), named)
	}
	// buckets' JSON has the total (N2-4: a sum in Python failed on the
	// nulls of the bands --band did not read): of every band, and of one.
	for band, want := range map[string]int{"-1": lists, "3": 0} {
		out, _ := mustRun(t, "buckets", "--db", idx, "--band", band, "--top", "0", "--output", "json")
		var bs struct {
			Total int    `json:"posting_lists"`
			Lists []*int `json:"posting_lists_per_band"`
		}
		if err := json.Unmarshal([]byte(out), &bs); err != nil {
			t.Fatal(err)
		}
		if band == "3" {
			want = *bs.Lists[3]
		}
		if bs.Total != want || want == 0 {
			t.Errorf("buckets --band %s: posting_lists %d, want %d", band, bs.Total, want)
		}
	}
	for i, h := range all {
		if i > 0 && h.Size > all[i-1].Size {
			t.Fatalf("list %d of size %d after one of %d", i, h.Size, all[i-1].Size)
		}
		if i < 3 || i == len(all)-1 {
			out, _ := mustRun(t, "bucket", "--db", idx, strconv.Itoa(h.Band), h.Bucket)
			members := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(members) != h.Size {
				t.Fatalf("band %d bucket %s: size %d, bucket prints %d members", h.Band, h.Bucket, h.Size, len(members))
			}
			// NB: 0x and 0X prefixes, upper-case digits (an inspection
			// review's Q7: 0X was refused).
			for _, b := range []string{"0x" + h.Bucket, "0X" + strings.ToUpper(h.Bucket)} {
				if again, _ := mustRun(t, "bucket", "--db", idx, strconv.Itoa(h.Band), b); again != out {
					t.Fatalf("bucket %s printed\n%s\nwant as %s:\n%s", b, again, h.Bucket, out)
				}
			}
		}
	}
	if _, top3 := stats("3"); len(top3) != 3 || top3[0].Size != all[0].Size || top3[2].Size != all[2].Size {
		t.Fatalf("--top 3: %+v, the largest: %+v", top3, all[:3])
	}
	if _, none := stats("0"); len(none) != 0 {
		t.Fatalf("--top 0 listed %+v", none)
	}
	if out, _ := mustRun(t, "stats", "--db", idx, "--top", "0"); strings.Contains(out, "hottest") {
		t.Fatalf("--top 0 printed hottest buckets:\n%s", out)
	}
	if _, errOut, code := runLine([]string{"stats", "--db", idx, "--top", "-1"}, ""); code != 2 || errOut != "lshdb: --top -1: must be at least 0\n" {
		t.Fatalf("--top -1: exit %d, %q", code, errOut)
	}
	out, errOut, code := runLine([]string{"shell", "--db", idx}, "stats --top 2 --output json\n")
	var st struct {
		Hottest []hot `json:"hottest"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Hottest) != 2 || st.Hottest[0].Size != all[0].Size {
		t.Fatalf("the shell's stats --top 2: exit %d, %q, %q", code, out, errOut)
	}
}

// Ensure that buckets' table says which band it covers and how many posting
// lists (it said neither: an inspection review's Q7), the count being the
// JSON histogram's total, and that an empty index's histogram says none
// under its heading.
func TestBucketsTableSaysBand(t *testing.T) {
	dir := fixture(t)
	for _, c := range []struct{ band, which string }{{"3", "band 3"}, {"-1", "all 16 bands"}} {
		out, _ := mustRun(t, "buckets", "--db", dir, "--band", c.band, "--output", "json")
		var st struct {
			Histogram []int `json:"bucket_size_histogram"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		lists := 0
		for _, n := range st.Histogram {
			lists += n
		}
		out, _ = mustRun(t, "buckets", "--db", dir, "--band", c.band)
		if want := fmt.Sprintf("%s: %d posting lists\n", c.which, lists); !strings.HasPrefix(out, want) || lists == 0 {
			t.Errorf("buckets --band %s: %q, want it to start %q", c.band, out, want)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	mustRun(t, "create", "--db", empty)
	for _, cmd := range []string{"buckets", "stats"} {
		if out, _ := mustRun(t, cmd, "--db", empty); !strings.Contains(out, "bucket sizes: none (no posting list)\n") {
			t.Errorf("%s of an empty index:\n%s", cmd, out)
		}
	}
}

// TestNoneRecallSaid: an estimate-only (storage none) index's info said
// "P(candidate) at the threshold: 0.9923" alone, and its JSON an
// expected_recall of 0.9923, where a pair at the threshold is reported
// about half the time (a recall review: 69 of 99 pairs found within 0.02
// above 0.8). info, stats and create now say it, in text and in JSON
// (estimate_only_recall_at_threshold). The oracle: the chance that some
// band's rows all agree and at least k of the 128 values do (k the least
// with k/128 >= t), each agreeing with probability t, computed with
// Python's exact fractions as P(X >= k) less the same with no band whole
// (polynomial powers of each band's count, not the sum the code makes):
// 0.4998307487910844 at 0.8 (b 16, r 6), 0.5345377437693212 at 0.5 (b 35,
// r 3). It was P(candidate) times P(X >= k) (0.4962 at 0.8), which a
// candidate's agreeing band makes too low (a statistician's review, Q1).
// A text index says none of it.
func TestNoneRecallSaid(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		threshold string
		recall    float64
	}{{"0.8", 0.4998307487910844}, {"0.5", 0.5345377437693212}} {
		idx := filepath.Join(dir, "none"+c.threshold)
		created := runOK(t, "create", "--db", idx, "--storage", "none", "--threshold", c.threshold, "--output", "json")
		info := runOK(t, "info", "--db", idx, "--output", "json")
		stats := runOK(t, "stats", "--db", idx, "--output", "json")
		for what, out := range map[string]string{"create": created, "info": info, "stats": stats} {
			var v struct {
				ExpectedRecall float64  `json:"expected_recall"`
				EstimateOnly   bool     `json:"estimate_only"`
				Recall         *float64 `json:"estimate_only_recall_at_threshold"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s: %v: %s", what, err, out)
			}
			if !v.EstimateOnly || v.Recall == nil || math.Abs(*v.Recall-c.recall) > 1e-9 {
				t.Errorf("%s at %s: %s; want estimate_only and a recall at the threshold of %.6f", what, c.threshold, out, c.recall)
			}
		}
		if text := runOK(t, "info", "--db", idx); !strings.Contains(text, "storage none: a candidate is reported when its estimate reaches the threshold too") ||
			!strings.Contains(text, fmt.Sprintf("(%.4f with P(candidate))", c.recall)) {
			t.Errorf("info at %s: %s; want the estimate-only note", c.threshold, text)
		}
	}
	idx := filepath.Join(dir, "text")
	runOK(t, "create", "--db", idx)
	if out := runOK(t, "info", "--db", idx, "--output", "json"); strings.Contains(out, "estimate_only") {
		t.Errorf("a text index's info: %s", out)
	}
	if out := runOK(t, "info", "--db", idx); strings.Contains(out, "storage none") {
		t.Errorf("a text index's info: %s", out)
	}
}

// Ensure that bucket --jaccard gives each member's Jaccard to the first
// member, and a summary of the bucket, as brute force over the members'
// texts computes them (N2-2: a hot bucket showed ids only), that
// --with-text gives each member's stored text as get does, and that get
// of several ids shows each as get of one does. On an index of storage
// none the column is the signatures' estimate, and says so.
func TestBucketJaccard(t *testing.T) {
	dir := t.TempDir()
	corpus := "../../testdata/corpora/debian-sample/docs.jsonl"
	idx, none := filepath.Join(dir, "idx"), filepath.Join(dir, "none")
	mustRun(t, "build", "--db", idx, corpus)
	mustRun(t, "build", "--db", none, "--storage", "none", corpus)
	sh, err := minhash.NewShingler(minhash.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := mustRun(t, "buckets", "--db", idx, "--top", "3", "--output", "json")
	var st struct {
		Hottest []struct {
			Band   int    `json:"band"`
			Bucket string `json:"bucket"`
			Size   int    `json:"size"`
		} `json:"hottest"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Hottest) != 3 {
		t.Fatalf("buckets: %v: %s", err, out)
	}
	type member struct {
		ID       string   `json:"id"`
		Jaccard  *float64 `json:"jaccard"`
		Estimate *float64 `json:"estimate"`
		Text     *string  `json:"text"`
	}
	members := func(out string) []member {
		var ms []member
		for line := range strings.Lines(out) {
			var m member
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			ms = append(ms, m)
		}
		return ms
	}
	var stored string
	for i, h := range st.Hottest {
		band := strconv.Itoa(h.Band)
		out, errOut := mustRun(t, "bucket", "--db", idx, band, h.Bucket, "--jaccard", "--with-text", "--output", "json")
		ms := members(out)
		if len(ms) != h.Size || h.Size < 2 {
			t.Fatalf("bucket %d %s: %d members, buckets said %d", h.Band, h.Bucket, len(ms), h.Size)
		}
		first := sh.AppendSet(nil, *ms[0].Text)
		sets := map[string]bool{}
		var ids []string
		reach := 0
		for _, m := range ms {
			ids = append(ids, m.ID)
			set := sh.AppendSet(nil, *m.Text)
			sets[fmt.Sprint(set)] = true
			want := minhash.Jaccard(first, set)
			if m.Jaccard == nil || *m.Jaccard != want || m.Estimate != nil {
				t.Errorf("bucket %d %s: %s: jaccard %v, estimate %v; brute force %v", h.Band, h.Bucket, m.ID, m.Jaccard, m.Estimate, want)
			}
			if m.ID != ms[0].ID && want >= 0.8 {
				reach++
			}
		}
		if i > 0 {
			continue // get is checked on the first bucket
		}
		stored = ids[0]
		summary := fmt.Sprintf("%d members in %d distinct sets; Jaccard to the first member", len(ms), len(sets))
		reached := fmt.Sprintf("; %d of the other %d at or above the threshold 0.8", reach, len(ms)-1)
		if !strings.Contains(errOut, summary) || !strings.Contains(errOut, reached) {
			t.Errorf("bucket %d %s: summary %q; want %q … %q", h.Band, h.Bucket, errOut, summary, reached)
		}
		// get of all the members at once: each as get of one shows it.
		var want []string
		for _, m := range ms {
			one, _ := mustRun(t, "get", "--db", idx, m.ID)
			want = append(want, one)
			got, _ := mustRun(t, "get", "--db", idx, m.ID, "--output", "json")
			var doc struct{ Text string }
			if err := json.Unmarshal([]byte(got), &doc); err != nil || doc.Text != *m.Text {
				t.Errorf("%s: get's text %q, bucket's %q (%v)", m.ID, doc.Text, *m.Text, err)
			}
		}
		all, _ := mustRun(t, append([]string{"get", "--db", idx}, ids...)...)
		if all != strings.Join(want, "\n") {
			t.Errorf("get of %d ids:\n%s\nwant:\n%s", len(ids), all, strings.Join(want, "\n"))
		}
		// Storage none: the same bucket (the same banding), estimates.
		out, errOut = mustRun(t, "bucket", "--db", none, band, h.Bucket, "--jaccard", "--output", "json")
		for _, m := range members(out) {
			if m.Jaccard != nil || m.Estimate == nil || m.Text != nil {
				t.Errorf("storage none: %s: jaccard %v, estimate %v, text %v", m.ID, m.Jaccard, m.Estimate, m.Text)
			}
		}
		if !strings.Contains(errOut, "estimated Jaccard (storage none keeps no set: from the signatures)") {
			t.Errorf("storage none: summary %q", errOut)
		}
	}
	// A missing id fails get after the others are shown; words of an id
	// with spaces, unquoted, are told to quote it.
	out, errOut, code := runLine([]string{"get", "--db", idx, "nope", stored, "nope2"}, "")
	one, _ := mustRun(t, "get", "--db", idx, stored)
	if code != 3 || out != one || !strings.Contains(errOut, `document not found: 2 of the 3 ids: "nope", "nope2"`) {
		t.Errorf("get with missing ids: exit %d, %q, %q", code, out, errOut)
	}
}
