package docio

import (
	"bytes"
	"encoding/json"
)

// The scanner below finds the members of a JSON object that json.Valid
// has accepted: it does not check the syntax again, and on valid input it
// never indexes past the end.

// member returns the raw value of the member named key of the object obj,
// the last one when the key repeats (as encoding/json keeps the last).
func member(obj []byte, key string) (val []byte, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return val, ok // '}': the end of the object
		}
		kEnd := stringEnd(obj, i)
		k := obj[i+1 : kEnd-1]
		i = skipSpace(obj, kEnd) + 1 // the ':'
		i = skipSpace(obj, i)
		vEnd := valueEnd(obj, i)
		if keyIs(k, key) {
			val, ok = obj[i:vEnd], true
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return val, ok
		}
		i++
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index after the string that opens at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i // a number, true, false or null
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// keyIs reports whether the raw key k (without its quotes) is key.
func keyIs(k []byte, key string) bool {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k) == key
	}
	var s string
	quoted := make([]byte, 0, len(k)+2)
	quoted = append(append(append(quoted, '"'), k...), '"')
	return json.Unmarshal(quoted, &s) == nil && s == key
}
