// Package fspath answers where a path lies in the file system, symbolic
// links resolved: what a check that a directory is inside (or outside)
// another needs, for a path that may not exist yet.
package fspath

import (
	"path/filepath"
	"strings"
)

// Resolve returns path absolute and cleaned, with the symbolic links of
// its longest existing prefix resolved and the rest (not yet made)
// joined on.
func Resolve(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// Within reports whether path is dir or lies inside it, both resolved
// (Resolve): a name that passes through a link into dir is inside it, and
// one under dir that a link leads out of is not.
func Within(path, dir string) bool {
	rel, err := filepath.Rel(Resolve(dir), Resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
