package adapters

import (
	"errors"
	"reflect"
	"testing"

	"github.com/redis/rueidis"
)

// errorResult must give what rueidis.NewErrorResult gives (the release
// built in has it): a result whose Error is the error, and which a caller
// does not take for a server reply.
func TestRueidisErrorResult(t *testing.T) {
	e := errors.New("cut off")
	got, want := errorResult(e), rueidis.NewErrorResult(e)
	if got.Error() != e || want.Error() != e {
		t.Fatalf("errorResult(e).Error() = %v, NewErrorResult(e).Error() = %v, want %v", got.Error(), want.Error(), e)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("errorResult(e) = %+v, NewErrorResult(e) = %+v", got, want)
	}
	if answered(got.Error()) {
		t.Fatal("an error result counts as answered")
	}
}
