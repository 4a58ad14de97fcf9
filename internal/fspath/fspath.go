// Package fspath answers where a path lies in the file system, symbolic
// links resolved: what a check that a directory is inside (or outside)
// another needs, for a path that may not exist yet.
package fspath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Resolve returns path absolute and cleaned, with the symbolic links of
// its longest existing prefix resolved and the rest (not yet made)
// joined on.
func Resolve(path string) string {
	// NB: Abs cleans "link/../x" to "x" without following link, where the
	// system goes to link's target's parent: a name through a link out of
	// a directory would be judged inside it.
	p, err := filepath.Abs(ResolveDotDot(path))
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

// ResolveDotDot returns dir with the symbolic links before its ".."
// resolved, if it has a ".." (else dir as it is). NB: Pebble joins its
// file names to dir lexically ("link/../idx" + "LOCK" is "idx/LOCK"),
// where the system resolves "link" first and then goes to its target's
// parent: the two would be different directories. Resolved, they are the
// same one. Where no part of dir exists, or it cannot be resolved, dir
// is returned as it is (a part made later is a plain directory, for which
// the lexical name is right).
func ResolveDotDot(dir string) string {
	if !slices.Contains(strings.Split(filepath.ToSlash(dir), "/"), "..") {
		return dir
	}
	var rest []string // the parts after p, which do not exist
	for p := dir; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		// NB: not filepath.Dir, which cleans "link/.." to ".".
		i := strings.LastIndexFunc(p, func(r rune) bool { return os.IsPathSeparator(uint8(r)) })
		if i <= 0 {
			return dir
		}
		rest = append([]string{p[i+1:]}, rest...)
		p = p[:i]
	}
}
