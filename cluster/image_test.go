package cluster

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// stubImages is a docker client with some images present and a registry
// that answers (pullOK) or not: image resolution is tested without any
// real pull.
type stubImages struct {
	present map[string]bool
	pullOK  bool
	pulled  []string
}

func (s *stubImages) ImageInspect(_ context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if s.present[image] {
		return client.ImageInspectResult{}, nil
	}
	return client.ImageInspectResult{}, errors.New("No such image: " + image)
}

func (s *stubImages) ImagePull(_ context.Context, ref string, _ client.ImagePullOptions) (client.ImagePullResponse, error) {
	s.pulled = append(s.pulled, ref)
	if !s.pullOK {
		return nil, errors.New("dial tcp: lookup registry-1.docker.io: no such host")
	}
	s.present[ref] = true
	return pullDone{io.NopCloser(strings.NewReader(""))}, nil
}

type pullDone struct{ io.ReadCloser }

func (pullDone) JSONMessages(context.Context) iter.Seq2[jsonstream.Message, error] {
	return func(func(jsonstream.Message, error) bool) {}
}
func (pullDone) Wait(context.Context) error { return nil }

func TestResolveImage(t *testing.T) {
	t.Setenv(ImageEnv, "")
	for _, c := range []struct {
		name      string
		present   []string
		pullOK    bool
		requested string
		want      string
		pulls     int
		why       string // a substring of why, "" = none
		fail      string // a substring of the error
	}{
		{"official here", []string{OfficialImage, LocalImage}, false, "", OfficialImage, 0, "", ""},
		{"official pulled", []string{LocalImage}, true, "", OfficialImage, 1, "pulled", ""},
		{"no registry: local fallback", []string{LocalImage}, false, "", LocalImage, 1, "could not be pulled", ""},
		{"nothing at all", nil, false, "", "", 1, "", "docker-image.sh"},
		{"asked and here", []string{"valkey/valkey:8"}, false, "valkey/valkey:8", "valkey/valkey:8", 0, "", ""},
		{"asked, pulled", nil, true, "redis:7.2", "redis:7.2", 1, "pulled", ""},
		{"asked, no registry", []string{LocalImage}, false, "redis:7.2", "", 1, "", "redis:7.2 is not here"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &stubImages{present: map[string]bool{}, pullOK: c.pullOK}
			for _, p := range c.present {
				s.present[p] = true
			}
			got, why, err := resolveImage(context.Background(), s, c.requested)
			if c.fail != "" {
				if err == nil || !strings.Contains(err.Error(), c.fail) {
					t.Fatalf("err = %v, want one naming %q", err, c.fail)
				}
			} else if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
			if len(s.pulled) != c.pulls {
				t.Errorf("pulls %v, want %d", s.pulled, c.pulls)
			}
			if c.why != "" && !strings.Contains(why, c.why) || c.why == "" && why != "" && c.fail == "" {
				t.Errorf("why = %q, want %q", why, c.why)
			}
		})
	}
	t.Setenv(ImageEnv, "mirror.local/redis:7")
	s := &stubImages{present: map[string]bool{"mirror.local/redis:7": true}}
	if got, _, err := resolveImage(context.Background(), s, ""); err != nil || got != "mirror.local/redis:7" || len(s.pulled) != 0 {
		t.Errorf("$%s: got %q, %v, pulls %v", ImageEnv, got, err, s.pulled)
	}
}

// stubRyuk is a docker client with or without Ryuk's image and a bridge
// network.
type stubRyuk struct{ image, bridge bool }

func (s stubRyuk) ImageInspect(_ context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if s.image && image == ryukImage {
		return client.ImageInspectResult{}, nil
	}
	return client.ImageInspectResult{}, errors.New("No such image: " + image)
}

func (s stubRyuk) NetworkInspect(_ context.Context, n string, _ client.NetworkInspectOptions) (client.NetworkInspectResult, error) {
	if s.bridge && n == "bridge" {
		return client.NetworkInspectResult{}, nil
	}
	return client.NetworkInspectResult{}, errors.New("network " + n + " not found")
}

// Ryuk is used only where it can work: its image already here (never
// pulled) and a bridge network to publish its port on.
func TestRyukUsable(t *testing.T) {
	for _, c := range []struct {
		image, bridge, want bool
		why                 string
	}{
		{false, true, false, "is not here"},
		{true, false, false, "no bridge network"},
		{false, false, false, "is not here"},
		{true, true, true, "Ryuk on"},
	} {
		on, why := ryukUsable(context.Background(), stubRyuk{c.image, c.bridge})
		if on != c.want || !strings.Contains(why, c.why) {
			t.Errorf("image %v bridge %v: %v %q, want %v and %q", c.image, c.bridge, on, why, c.want, c.why)
		}
	}
}
