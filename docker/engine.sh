#!/usr/bin/env bash
# Start a Docker engine on this machine, if it can run one, for tests/e2e/test_docker.py (`.ci/run` calls this).
#
# Best effort, and says what it did: exit 0 once `docker info` answers, 1 (with the reason on one line) when the
# engine cannot run here — the test then skips with `docker info`'s own error. Needs root. On a Debian machine
# without an engine it installs Debian's docker.io and docker-compose (and debootstrap, for the base image below)
# and starts dockerd in the background, its log in $DOCKER_ENGINE_LOG.
#
# The image's base, python:3.11-slim-bookworm, comes from Docker Hub. Where Docker Hub is out of reach (the
# project's CI machines reach Debian's mirror, not Docker Hub) a stand-in of that name is made from Debian
# bookworm's own packages: a minimal root file system (debootstrap) with Debian's Python 3.11 and pip, pip
# allowed to install into it as the official image's is, and this machine's extra certificate authorities
# (/usr/local/share/ca-certificates: a TLS-inspecting egress proxy's, on the project's machines) trusted as the
# machine trusts them, as a site's own base image would. docker/Dockerfile then builds unchanged. The stand-in is
# not the published image: it tests the Dockerfile's steps and the stack, not the official base.
set -uo pipefail

LOG=${DOCKER_ENGINE_LOG:-/var/log/hudi-streaming-dockerd.log}
BASE=python:3.11-slim-bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

fail() { echo "docker engine: not started: $*" >&2; exit 1; }

if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "starting dockerd needs root"
  need=()
  command -v dockerd >/dev/null || need+=(docker.io)
  command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  if [ ${#need[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || fail "no apt-get to install ${need[*]}"
    apt-get update -q >"$LOG.apt" 2>&1 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >>"$LOG.apt" 2>&1 \
      || fail "apt-get install ${need[*]} failed: $(tail -1 "$LOG.apt")"
  fi
  nohup dockerd >"$LOG" 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    kill -0 $! 2>/dev/null || fail "dockerd exited: $(grep -m1 -i 'level=fatal\|failed to start' "$LOG" || tail -1 "$LOG")"
    sleep 1
  done
  docker info >/dev/null 2>&1 || fail "dockerd did not answer in 60 s: $(tail -1 "$LOG")"
fi
echo "docker engine: $(docker info --format '{{.ServerVersion}}, storage {{.Driver}}')"

if ! docker image inspect "$BASE" >/dev/null 2>&1 && ! timeout 60 docker pull -q "$BASE" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || fail "$BASE cannot be pulled, and no debootstrap to make a stand-in"
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase --include=ca-certificates,python3,python3-pip,python3-venv,python-is-python3 \
    bookworm "$root" "$MIRROR" >"$LOG.debootstrap" 2>&1 || fail "debootstrap failed: $(tail -1 "$LOG.debootstrap")"
  rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root"/usr/local/share/ca-certificates/
    chroot "$root" update-ca-certificates >>"$LOG.debootstrap" 2>&1 || fail "update-ca-certificates in the stand-in failed"
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import --change 'CMD ["python3"]' - "$BASE" >/dev/null \
    || fail "docker import of the stand-in $BASE failed"
  echo "docker engine: $BASE is a stand-in made from Debian bookworm's packages ($MIRROR)"
fi
