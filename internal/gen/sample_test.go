package gen

import (
	"bytes"
	"os"
	"testing"
)

// Ensure that the embedded sample is testdata/corpora/debian-sample/docs.jsonl
// byte for byte (regenerate it as sample/SOURCE.md says when this fails),
// and that SampleTexts reads all of its 1,277 documents.
func TestSampleMatchesTestdata(t *testing.T) {
	want, err := os.ReadFile("../../testdata/corpora/debian-sample/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got, err := SampleJSONL()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the embedded sample (%d bytes) differs from testdata's (%d bytes)", len(got), len(want))
	}
	texts, err := SampleTexts()
	if err != nil || len(texts) != 1277 || len(texts) != bytes.Count(want, []byte("\n")) {
		t.Fatalf("%d texts, %v", len(texts), err)
	}
}
