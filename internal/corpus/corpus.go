// Package corpus reads the JSON Lines corpora that tests, benchmarks and
// examples run on: the small fixtures in testdata/ (always present) and the
// real corpora in ../shared/corpora beside the repository (present on the
// developers' machines and in CI, absent from a user's clone: callers MUST
// skip cleanly when [SharedDir] reports it missing).
package corpus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lshdb/lshdb/internal/docio"
)

// Doc is one document of a corpus.
type Doc struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// ErrNoShared is returned when ../shared/corpora is not beside the module.
var ErrNoShared = errors.New("corpus: ../shared/corpora not found (it is only beside developer and CI checkouts)")

// ModuleRoot returns the directory holding go.mod, searching upward from
// the working directory (a test's working directory is its package's).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("corpus: go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Testdata returns the path of name under the module's testdata/.
func Testdata(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testdata", name), nil
}

// SampleTexts returns the texts of the testdata sample corpus
// (testdata/corpora/debian-sample): real text that tests and generated
// corpora can always use.
func SampleTexts() ([]string, error) {
	path, err := Testdata("corpora/debian-sample/docs.jsonl")
	if err != nil {
		return nil, err
	}
	docs, err := Load(path, 0)
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(docs))
	for i, d := range docs {
		texts[i] = d.Text
	}
	return texts, nil
}

// SharedDir returns the path of ../shared/corpora/name beside the module,
// or an error wrapping ErrNoShared when it is absent.
func SharedDir(name string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "corpora", name)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%w: %s", ErrNoShared, dir)
	}
	return dir, nil
}

// Shared loads up to limit documents (all when limit <= 0) of the shared
// corpus name, from docs.jsonl or docs.jsonl.gz.
func Shared(name string, limit int) ([]Doc, error) {
	dir, err := SharedDir(name)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"docs.jsonl", "docs.jsonl.gz"} {
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); err == nil {
			return Load(p, limit)
		}
	}
	return nil, fmt.Errorf("%w: no docs.jsonl(.gz) in %s", ErrNoShared, dir)
}

// Load reads up to limit documents (all when limit <= 0) from a JSON Lines
// file, gzip- or zstd-compressed or not (told by content), through
// [docio.Read]. A malformed record fails the call, naming its file and line.
func Load(path string, limit int) ([]Doc, error) {
	var docs []Doc
	for rec, err := range docio.Read(context.Background(), []string{path}, nil, docio.Options{Format: "jsonl"}) {
		if err != nil {
			return nil, err
		}
		docs = append(docs, Doc{ID: rec.ID, Text: rec.Text})
		if limit > 0 && len(docs) >= limit {
			break
		}
	}
	return docs, nil
}
