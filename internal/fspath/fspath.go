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
// joined on. NB: a relative path is put under the working directory
// without cleaning it: filepath.Abs cleans "link/../x" to "x" without
// following link, where the system goes to link's target's parent, so a
// name through a link out of a directory was judged inside it.
func Resolve(path string) string {
	p := path
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return filepath.Clean(path)
		}
		p = wd + string(filepath.Separator) + p
	}
	if r, ok := resolvePrefix(p); ok {
		return r
	}
	return filepath.Clean(p)
}

// Within reports whether path is dir or lies inside it, both resolved
// (Resolve): a name that passes through a link into dir is inside it, and
// one under dir that a link leads out of is not.
func Within(path, dir string) bool { return Under(Resolve(path), Resolve(dir)) }

// Under reports whether path is dir or lies inside it, by their names
// alone (both absolute and clean; no link is followed).
func Under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ResolveDotDot returns dir with the symbolic links before its ".."
// resolved, if it has a ".." (else dir as it is). NB: Pebble joins its
// file names to dir lexically ("link/../idx" + "LOCK" is "idx/LOCK"),
// where the system resolves "link" first and then goes to its target's
// parent: the two would be different directories. Resolved, they are the
// same one. Where no part of dir exists, dir is returned as it is (a part
// made later is a plain directory, for which the lexical name is right).
func ResolveDotDot(dir string) string {
	if !slices.Contains(strings.Split(filepath.ToSlash(dir), "/"), "..") {
		return dir
	}
	if r, ok := resolvePrefix(dir); ok {
		return r
	}
	return dir
}

// resolvePrefix resolves the symbolic links of p's longest existing
// prefix and joins the rest on; ok is false when no prefix exists. NB: p
// is cut at its separators, not by filepath.Dir, which cleans "link/.."
// to ".".
func resolvePrefix(p string) (string, bool) {
	var rest []string // the parts after p, which do not exist
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), true
		}
		i := strings.LastIndexFunc(p, func(r rune) bool { return os.IsPathSeparator(uint8(r)) })
		root := len(filepath.VolumeName(p))
		switch {
		case i < 0:
			return "", false
		case i == root && p[i+1:] == "":
			return "", false // the root itself does not resolve
		case i == root:
			rest, p = append([]string{p[i+1:]}, rest...), p[:i+1]
		default:
			rest, p = append([]string{p[i+1:]}, rest...), p[:i]
		}
	}
}
