package history

import (
	"encoding/json"
)

// decodeEvent decodes one history line into ev. Lines in the shape AppendJSON
// writes for client steps (flat fields, integers, printable-ASCII strings
// without escapes) are parsed by hand; anything else (faults, meta, escapes,
// whitespace, unknown fields, a malformed line) goes to encoding/json, which
// decides and words the error. Both give the same Event (TestDecodeEvent).
func decodeEvent(raw []byte, ev *Event, in *interner) error {
	*ev = Event{}
	if fastDecode(raw, ev, in) {
		return nil
	}
	*ev = Event{}
	return json.Unmarshal(raw, ev)
}

// interner shares the strings that repeat across a history (keys, nodes,
// ops) instead of allocating one per event.
type interner struct{ m map[string]string }

func (in *interner) str(b []byte) string {
	if s, ok := in.m[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = map[string]string{}
	}
	if len(in.m) < 1<<14 {
		in.m[s] = s
	}
	return s
}

func fastDecode(b []byte, ev *Event, in *interner) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i, end := 1, len(b)-1
	for i < end {
		if b[i] != '"' {
			return false
		}
		j := i + 1
		for j < end && b[j] != '"' {
			j++
		}
		if j+1 >= end || b[j+1] != ':' {
			return false
		}
		name := b[i+1 : j]
		i = j + 2
		var ok bool
		switch string(name) {
		case "t", "end", "client", "depth", "deadline", "value", "fence":
			if string(name) == "fence" && i < end && b[i] == '-' {
				return false // unsigned: even -0 is an error
			}
			var v int64
			v, i, ok = fastInt(b, i, end)
			if ok {
				setInt(ev, string(name), v)
			}
		case "key", "op", "result", "token", "node", "err", "detail":
			var s []byte
			s, i, ok = fastStr(b, i, end)
			if !ok {
				return false
			}
			switch string(name) {
			case "key":
				ev.Key = in.str(s)
			case "op":
				ev.Op = Op(in.str(s))
			case "result":
				ev.Result = Result(in.str(s))
			case "token":
				ev.Token = string(s)
			case "node":
				ev.Node = in.str(s)
			case "err":
				ev.Err = in.str(s)
			case "detail":
				ev.Detail = in.str(s)
			}
		default: // fault, meta, or a field this parser does not know
			return false
		}
		if !ok {
			return false
		}
		if i < end {
			if b[i] != ',' {
				return false
			}
			i++
			if i == end {
				return false // trailing comma
			}
		}
	}
	return true
}

// setInt sets ev's integer field name to v (a fence never arrives negative).
func setInt(ev *Event, name string, v int64) {
	switch name {
	case "t":
		ev.T = v
	case "end":
		ev.End = v
	case "client":
		ev.Client = int(v)
	case "depth":
		ev.Depth = int(v)
	case "deadline":
		ev.Deadline = v
	case "value":
		ev.Value = v
	case "fence":
		ev.Fence = uint64(v)
	}
}

// fastInt reads a JSON integer that fits int64 at b[i:], followed by ',' or
// the end.
func fastInt(b []byte, i, end int) (int64, int, bool) {
	neg := false
	if i < end && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var v int64
	for i < end && b[i] >= '0' && b[i] <= '9' {
		if v > (1<<63-1-9)/10 {
			return 0, i, false // may overflow: let encoding/json decide
		}
		v = v*10 + int64(b[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || (n > 1 && b[start] == '0') || (i < end && b[i] != ',') {
		return 0, i, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// fastStr reads a JSON string of printable ASCII without escapes at b[i:],
// followed by ',' or the end.
func fastStr(b []byte, i, end int) ([]byte, int, bool) {
	if i >= end || b[i] != '"' {
		return nil, i, false
	}
	i++
	start := i
	for i < end && b[i] != '"' {
		if c := b[i]; c < 0x20 || c > 0x7e || c == '\\' {
			return nil, i, false
		}
		i++
	}
	if i >= end {
		return nil, i, false
	}
	s := b[start:i]
	i++
	if i < end && b[i] != ',' {
		return nil, i, false
	}
	return s, i, true
}
