package history

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

var decodeCases = []string{
	`{"t":1,"client":0,"key":"k1","op":"acquire","result":"ok","token":"abc","fence":7,"depth":2,"deadline":99,"value":-5,"end":3}`,
	`{"t":-1,"client":-1,"op":"server","node":"n2","detail":"expired k3"}`,
	`{"t":5,"client":2,"key":"k","op":"release","result":"unknown","err":"i/o timeout: read tcp 127.0.0.1:1->127.0.0.1:2"}`,
	`{"t":1,"client":1,"op":"fault","fault":{"id":1,"kind":"pause-client","target":"client 1","applied":true}}`,
	`{"t":1,"client":1,"op":"run","meta":{"ttl_ms":500}}`,
	`{"t":1,"client":1,"op":"read","err":"quote \" inside"}`,
	`{"t":1,"client":1,"op":"read","detail":"non-ASCII é"}`,
	`{"t":1,"client":1,"op":"read","detail":"bad \xff utf8"}`,
	`{"t":1, "client":1,"op":"read"}`,
	`{"T":4,"client":1,"op":"read"}`,
	`{"t":1,"client":1,"op":"read","unknown":1}`,
	`{"t":1,"client":1,"op":"read","fence":18446744073709551615}`,
	`{"t":9223372036854775807,"client":1,"op":"read"}`,
	`{"t":1.5,"client":1,"op":"read"}`,
	`{"t":01,"client":1,"op":"read"}`,
	`{"t":1,"client":1,"op":"read",}`,
	`{"t":1,"client":1,"op":"read","key":null}`,
	`{"t":1,"t":2,"client":1,"op":"read"}`,
	`{"t":1,"client":1,"op":"read","fence":-1}`,
	`{"t":1,"client":"1","op":"read"}`,
	`{"t":1,"client":1,"op":"read"`,
	`{}`,
	`{"t":`,
	`{"t":1 ,"op":"x"}`,
}

// decodeEvent gives what encoding/json gives, error or not, for the lines
// AppendJSON writes and for lines it never would.
func TestDecodeEvent(t *testing.T) {
	var in interner
	for _, c := range decodeCases {
		var want, got Event
		werr := json.Unmarshal([]byte(c), &want)
		gerr := decodeEvent([]byte(c), &got, &in)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(want, got) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v, %v", c, got, gerr, want, werr)
		}
	}
	// Round trips of what the writer writes take the fast path.
	evs := []Event{
		{T: 123456789, End: 123459999, Client: 7, Key: "k42", Op: OpAcquire, Result: OK, Token: "0123456789abcdef", Depth: 1, Deadline: 623456789},
		{T: math.MaxInt64 / 2, Client: -1, Op: OpServer, Node: "n1", Detail: "del k1", Value: math.MinInt64 / 2, Fence: math.MaxInt64 / 2},
		{T: 1, Client: 3, Key: "k", Op: OpWrite, Result: Fail, Value: 4, Fence: 2, Err: "stale fence 2, holder has 3"},
	}
	for _, e := range evs {
		raw := AppendJSON(nil, &e)
		var got Event
		if !fastDecode(raw, &got, &in) || !reflect.DeepEqual(got, e) {
			t.Errorf("%s: fast path %+v, want %+v", raw, got, e)
		}
	}
}

// FuzzDecodeEvent: whatever the fast path accepts, encoding/json accepts
// with the same result.
func FuzzDecodeEvent(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var in interner
		var fast Event
		if !fastDecode(raw, &fast, &in) {
			return
		}
		var want Event
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%q: fast path accepted what encoding/json rejects: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", raw, fast, want)
		}
	})
}
