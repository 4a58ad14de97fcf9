package gen

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
)

// NB: the sample is embedded (gzip, 173 KB) so that a built lshdb
// generates corpora from any directory; locating testdata/ through go.mod
// worked only inside the source tree (newcomer review C6).
//
//go:embed sample/docs.jsonl.gz
var sampleGz []byte

// SampleJSONL returns the embedded copy of
// testdata/corpora/debian-sample/docs.jsonl, decompressed.
func SampleJSONL() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(sampleGz))
	if err != nil {
		return nil, fmt.Errorf("gen: embedded sample: %w", err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("gen: embedded sample: %w", err)
	}
	return b.Bytes(), nil
}

// SampleTexts returns the texts of the embedded sample corpus (1,277
// Debian package descriptions), in file order.
func SampleTexts() ([]string, error) {
	b, err := SampleJSONL()
	if err != nil {
		return nil, err
	}
	var texts []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var d struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("gen: embedded sample line %d: %w", line, err)
		}
		texts = append(texts, d.Text)
	}
	return texts, sc.Err()
}
