# lockchaos itself, for worker pods (lockchaos k8s) or a container on a
# host's network. No base image to pull: scripts/lockchaos-image.sh builds
# the static binary and stages this context (the binary, the host's CA
# certificates for rediss://, an empty /tmp).
FROM scratch
COPY lockchaos /lockchaos
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY tmp/ /tmp/
ENV HOME=/tmp TMPDIR=/tmp
WORKDIR /tmp
ENTRYPOINT ["/lockchaos"]
