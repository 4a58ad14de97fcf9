package docio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// lineReader reads lines with a cap on their length: a line longer than
// max bytes is consumed chunk by chunk and dropped, never held.
type lineReader struct {
	name   string
	br     *bufio.Reader
	max    int
	buf    []byte   // a long line, joined
	blocks [][]byte // a long line's chunks until its end
	line   int      // the number of the line last returned (1-based)
	// joined says that the line last returned, longer than the read
	// buffer, was joined in buf: a caller may take buf (and set it nil).
	joined bool
	// end is the line end of the line last returned: "\n", "\r\n", or
	// "" (the input's last line, or a line too long to keep); "\r" for
	// an input's last line that ends in a lone CR.
	end string
	// scan, if set, sees every chunk of every line, kept or dropped (the
	// CSV reader follows its quotes with it).
	scan func([]byte)
	// stop makes a line longer than max an error at once (Options.LongStops).
	stop bool
}

func (lr *lineReader) reset(name string, br *bufio.Reader, max int, stop bool) {
	lr.name, lr.br, lr.max, lr.line, lr.scan, lr.stop = name, br, max, 0, nil, stop
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // NB: a huge line's buffer is not kept for the next file
	}
}

// next returns the next line without its "\n" and "\r\n" (or a lone
// "\r" that ends the input), and its length
// in the input. A line longer than max is returned as long with b nil
// (with stop set, an error as soon as it passes max). At
// the end of the input it returns io.EOF; any other error names the file
// and line. b aliases lr's or the bufio.Reader's buffer until the next
// call.
func (lr *lineReader) next() (b []byte, n int, long bool, err error) {
	lr.line++
	lr.joined, lr.end = false, ""
	// NB: a line longer than the read buffer is kept as a list of its
	// chunks and joined once at its end: growing one buffer by doubling
	// left about twice the cap of garbage behind on an over-long line
	// (195 MiB of RSS for a 65 MiB cap, against 70 MiB now).
	lr.blocks = lr.blocks[:0]
	for {
		chunk, rerr := lr.br.ReadSlice('\n')
		if lr.scan != nil {
			lr.scan(chunk)
		}
		n += len(chunk)
		switch {
		case long:
		case n > lr.max+2 && lr.stop: // NB: +2: the line end does not count
			clear(lr.blocks)
			lr.blocks = lr.blocks[:0]
			return nil, n, true, fmt.Errorf("%s:%d: %w: more than %d bytes without a line end; reading stopped there (--skip-bad reads past such a line)", lr.name, lr.line, ErrTooLong, lr.max)
		case n > lr.max+2:
			long = true
			clear(lr.blocks)
			lr.blocks = lr.blocks[:0]
		case rerr == bufio.ErrBufferFull || len(lr.blocks) > 0:
			lr.blocks = append(lr.blocks, bytes.Clone(chunk))
		default:
			b = chunk // NB: a line within the read buffer is not copied
		}
		switch {
		case rerr == bufio.ErrBufferFull:
			continue
		case rerr == nil || rerr == io.EOF:
			if rerr == io.EOF && n == 0 {
				return nil, 0, false, io.EOF
			}
			if long {
				return nil, n, true, nil
			}
			if len(lr.blocks) > 0 {
				if cap(lr.buf) < n {
					lr.buf = make([]byte, 0, n)
				}
				lr.buf = lr.buf[:0]
				for _, blk := range lr.blocks {
					lr.buf = append(lr.buf, blk...)
				}
				clear(lr.blocks)
				lr.blocks = lr.blocks[:0]
				b = lr.buf
				lr.joined = true
			}
			t := trailing(b, len(b))
			if t == 0 && rerr == io.EOF && len(b) > 0 && b[len(b)-1] == '\r' {
				// NB: a lone CR ends the input's last line (a file cut
				// after its CR, or written with old Mac line ends): it was
				// kept as the last field's data ("text\r"), where
				// encoding/csv drops it (a fuzz campaign, F6). A CR
				// inside the input is data, as there.
				t = 1
			}
			if len(b)-t > lr.max {
				// NB: the early test above allows the longest line end (2
				// bytes) to every line: a line of max+1 or max+2 bytes
				// without its end (LF, or none) passed it.
				lr.buf, lr.joined = lr.buf[:0], false
				return nil, n, true, nil
			}
			lr.end = lineEnds[t]
			if t == 1 && b[len(b)-1] == '\r' {
				lr.end = "\r"
			}
			return b[:len(b)-t], n, false, nil
		default:
			return nil, n, long, fmt.Errorf("%s:%d: %w", lr.name, lr.line, truncated(rerr))
		}
	}
}

// lineEnds are the line ends by their length.
var lineEnds = [3]string{"", "\n", "\r\n"}

// trailing returns the length of the line end at the end of b ("\n",
// "\r\n" or nothing); with b nil, 0.
func trailing(b []byte, n int) int {
	if b == nil || n == 0 || b[n-1] != '\n' {
		return 0
	}
	if n >= 2 && b[n-2] == '\r' {
		return 2
	}
	return 1
}

// ErrTooLong is the cause of a bad record for an over-long line (or
// text file), and of the error that ends a reading with LongStops.
var ErrTooLong = errors.New("longer than the record limit")

func tooLong(n, max int) error {
	return fmt.Errorf("%w: %d bytes (at most %d)", ErrTooLong, n, max)
}
