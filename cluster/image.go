package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/moby/moby/client"
)

// Images of the docker backend. The default is the official image, so a
// run uses the Redis users deploy; where no registry answers (air-gapped
// machines, CI without a mirror) the run falls back to LocalImage, which
// scripts/docker-image.sh builds from the host's redis-server without any
// registry. --image (or LOCKCHAOS_IMAGE) names any image with redis-server
// on its PATH, Valkey's included; tests and CI name LocalImage that way so
// they never reach for a registry.
const (
	OfficialImage = "redis:7.4"
	LocalImage    = "lockchaos/redis:local"
)

// ImageEnv overrides the default image (tests, CI, a user's own mirror).
const ImageEnv = "LOCKCHAOS_IMAGE"

// pullTimeout bounds a pull: a registry that does not answer in this time
// is taken as none.
const pullTimeout = 2 * time.Minute

// imageAPI is what image resolution needs of the docker client (a stub in
// tests: no test pulls).
type imageAPI interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImagePull(ctx context.Context, ref string, options client.ImagePullOptions) (client.ImagePullResponse, error)
}

// resolveImage picks the image to run: the one asked for (requested, else
// $LOCKCHAOS_IMAGE), pulled if it is not here; else the official image,
// pulled if it is not here, and LocalImage when that pull fails. why says
// how the image was chosen when it is not simply the one asked for.
func resolveImage(ctx context.Context, api imageAPI, requested string) (image, why string, err error) {
	if requested == "" {
		requested = os.Getenv(ImageEnv)
	}
	if requested != "" {
		if present(ctx, api, requested) {
			return requested, "", nil
		}
		if err := pull(ctx, api, requested); err != nil {
			return "", "", fmt.Errorf("docker image %s is not here and could not be pulled: %v", requested, err)
		}
		return requested, "pulled " + requested, nil
	}
	if present(ctx, api, OfficialImage) {
		return OfficialImage, "", nil
	}
	perr := pull(ctx, api, OfficialImage)
	if perr == nil {
		return OfficialImage, "pulled " + OfficialImage, nil
	}
	if present(ctx, api, LocalImage) {
		return LocalImage, fmt.Sprintf("%s could not be pulled (%v); using %s, built from this host's redis-server by scripts/docker-image.sh", OfficialImage, perr, LocalImage), nil
	}
	return "", "", fmt.Errorf("no docker image: %s is not here and could not be pulled (%v), and %s is not here either (build it with scripts/docker-image.sh, or name an image with --image)", OfficialImage, perr, LocalImage)
}

func present(ctx context.Context, api imageAPI, image string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := api.ImageInspect(ctx, image)
	return err == nil
}

func pull(ctx context.Context, api imageAPI, image string) error {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	rc, err := api.ImagePull(ctx, image, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := rc.Wait(ctx); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, rc)
	return nil
}

// TestImage is the image tests run: $LOCKCHAOS_IMAGE, else LocalImage
// (never one that would have to be pulled).
func TestImage() string {
	if v := os.Getenv(ImageEnv); v != "" {
		return v
	}
	return LocalImage
}
