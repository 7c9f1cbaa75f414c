package history

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// ScanInfo says what a scan read.
type ScanInfo struct {
	Events int  // events decoded
	Torn   bool // the last line was incomplete (a killed run) and was skipped
}

// ErrStop, returned by a scan callback, ends the scan without error.
var ErrStop = errors.New("stop scan")

// ScanFile streams the events of a history file to fn, one at a time, without
// holding the history in memory. The *Event passed to fn is reused: copy it to
// keep it. A torn last line (a run killed mid-write) is skipped and reported in
// ScanInfo; a malformed line elsewhere is an error naming the line.
func ScanFile(path string, fn func(*Event) error) (ScanInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ScanInfo{}, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	info, err := Scan(f, fn)
	if err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// Scan is ScanFile over any reader.
func Scan(r io.Reader, fn func(*Event) error) (ScanInfo, error) {
	return scan(r, math.MinInt64, math.MaxInt64, fn)
}

// ScanWindow is ScanFile for the events that can matter to a window of run
// time: events that ended before from are skipped without being decoded
// (the writer puts "t" and "end" first on each line), and the scan stops
// at the first event starting after to. Events in between come in file
// order, as from ScanFile.
func ScanWindow(path string, from, to int64, fn func(*Event) error) (ScanInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ScanInfo{}, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	info, err := scan(f, from, to, fn)
	if err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// scan reads either form: a zstd stream holding a compact history (or
// JSONL), or plain JSONL.
func scan(r io.Reader, from, to int64, fn func(*Event) error) (ScanInfo, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if head, _ := br.Peek(4); bytes.Equal(head, zstdMagic) {
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return ScanInfo{}, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
		head, err := br.Peek(len(CompactMagic))
		if err != nil {
			// Cut inside the first block: a run killed before its first
			// flush.
			return ScanInfo{Torn: true}, nil
		}
		switch string(head) {
		case CompactMagic, compactMagicV3, compactMagicV2:
			br.Discard(len(CompactMagic))
			return scanCompact(br, string(head) == CompactMagic, from, to, fn)
		}
	}
	return scanJSONL(br, from, to, fn)
}

// scanCompact streams a compact history's records to fn.
func scanCompact(br *bufio.Reader, v4 bool, from, to int64, fn func(*Event) error) (ScanInfo, error) {
	var info ScanInfo
	d := &compactDec{r: br, tokens: map[int]string{}, v4: v4}
	var ev Event
	for {
		err := d.next(&ev)
		switch {
		case err == io.EOF:
			return info, nil
		case errors.Is(err, errTorn):
			info.Torn = true
			return info, nil
		case err != nil:
			return info, fmt.Errorf("record %d: %w", info.Events+1, err)
		}
		if ev.Op == "" {
			return info, fmt.Errorf("record %d: event has no op", info.Events+1)
		}
		if max(ev.T, ev.End) < from {
			continue
		}
		if ev.T > to {
			return info, nil
		}
		info.Events++
		if ferr := fn(&ev); ferr != nil {
			if errors.Is(ferr, ErrStop) {
				return info, nil
			}
			return info, ferr
		}
	}
}

func scanJSONL(br *bufio.Reader, from, to int64, fn func(*Event) error) (ScanInfo, error) {
	windowed := from != math.MinInt64 || to != math.MaxInt64
	var info ScanInfo
	var ev Event
	var in interner
	line := 0
	for {
		raw, err := br.ReadSlice('\n')
		var long []byte
		for errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, raw...)
			raw, err = br.ReadSlice('\n')
		}
		if long != nil {
			raw = append(long, raw...)
		}
		if len(raw) == 0 && err == io.EOF {
			return info, nil
		}
		if err != nil && err != io.EOF {
			return info, fmt.Errorf("read line %d: %w", line+1, err)
		}
		line++
		complete := err == nil // ended with '\n'
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			if !complete {
				return info, nil
			}
			continue
		}
		if windowed {
			if t, end, ok := LeadingTimes(raw); ok {
				if t > to {
					return info, nil
				}
				if max(t, end) < from {
					if !complete {
						return info, nil
					}
					continue
				}
			}
		}
		if uerr := decodeEvent(raw, &ev, &in); uerr != nil {
			if !complete {
				info.Torn = true
				return info, nil
			}
			return info, fmt.Errorf("line %d: not a history event: %w", line, uerr)
		}
		if ev.Op == "" {
			return info, fmt.Errorf("line %d: event has no \"op\"", line)
		}
		info.Events++
		if ferr := fn(&ev); ferr != nil {
			if errors.Is(ferr, ErrStop) {
				return info, nil
			}
			return info, ferr
		}
		if !complete {
			return info, nil
		}
	}
}

// ReadFile loads a whole history into memory (for small histories and tests).
func ReadFile(path string) ([]Event, ScanInfo, error) {
	var evs []Event
	info, err := ScanFile(path, func(e *Event) error {
		evs = append(evs, *e)
		return nil
	})
	return evs, info, err
}

// RunMeta returns the meta of the history's first OpRun event.
func RunMeta(path string) (map[string]any, error) {
	var meta map[string]any
	found := false
	_, err := ScanFile(path, func(e *Event) error {
		if e.Op == OpRun {
			found, meta = true, e.Meta
		}
		return ErrStop
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s: first event is not a %q event", path, OpRun)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	return meta, nil
}

// LeadingTimes reads "t" (and "end" when it follows) from the start of a
// history line as the Writer writes it, without decoding the rest; ok is
// false for a line that does not start that way.
func LeadingTimes(line []byte) (t, end int64, ok bool) {
	num := func(b []byte) (int64, []byte, bool) {
		i := 0
		if i < len(b) && b[i] == '-' {
			i++
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		v, err := strconv.ParseInt(string(b[:i]), 10, 64)
		return v, b[i:], err == nil
	}
	rest, found := bytes.CutPrefix(line, []byte(`{"t":`))
	if !found {
		return 0, 0, false
	}
	t, rest, ok = num(rest)
	if !ok {
		return 0, 0, false
	}
	if r, found := bytes.CutPrefix(rest, []byte(`,"end":`)); found {
		end, _, _ = num(r)
	}
	return t, end, true
}
