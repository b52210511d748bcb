#!/usr/bin/env bash
# Builds the repository's Dockerfile, as it is, with a real Docker engine on
# a host that cannot reach Docker Hub, then runs the image the way a
# Kubernetes Job would run it:
#   1. stand-ins for the Dockerfile's two base images, made here and tagged
#      with their names (no `docker pull`):
#        debian:bookworm-slim  a Debian bookworm minbase root (mmdebstrap);
#        rust:1-bookworm       that root with gcc, git and CA certificates,
#                              and this host's stable Rust toolchain under
#                              /usr/local/{rustup,cargo}, as the official
#                              image lays it out (plus the host's own CAs
#                              from /usr/local/share/ca-certificates);
#      a tag that already exists is kept (pass --fresh-bases to remake them);
#   2. `docker build` of the Dockerfile (its build stage compiles qexp in
#      release: about 15 minutes on 2 cores);
#   3. `docker run IMAGE run experiments/quickstart.toml`, as the image's
#      user in its working folder, on the embedded simulator;
#   4. two shards in two containers on their own network, shard 0 reached
#      by its container name as a Job's pods reach it by the headless
#      Service, each with the arguments `qexp kube` writes into the Job
#      (the plan read-only at /plan, a shared volume at /results), then
#      `qexp merge` and `qexp report` in a third container.
# Every container and the network are removed at the end, pass or fail.
#
# Needs root, dockerd running, mmdebstrap, and a Debian mirror.
#
#   scripts/kube/build-image-offline.sh [--fresh-bases] [TAG=qexp:rehearsal]
set -euo pipefail
cd "$(dirname "$0")/../.."

fresh=0
if [ "${1:-}" = "--fresh-bases" ]; then
    fresh=1
    shift
fi
tag="${1:-qexp:rehearsal}"
work="$(mktemp -d /tmp/qexp-image-build.XXXXXX)"
net="qexp-rehearsal-$$"
say() { echo "[build-image $(date +%H:%M:%S)] $*" >&2; }

if [ "$(id -u)" != 0 ] || ! command -v mmdebstrap >/dev/null || ! docker info >/dev/null 2>&1; then
    echo "build-image-offline: needs root, mmdebstrap and a running dockerd" >&2
    exit 2
fi

cleanup() {
    local rc=$?
    docker rm -f "$net-sim" "$net-s0" "$net-s1" "$net-merge" >/dev/null 2>&1 || true
    docker network rm "$net" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

have() { docker image inspect "$1" >/dev/null 2>&1; }

# 1. Base images.
if [ "$fresh" = 1 ] || ! have debian:bookworm-slim; then
    say "making debian:bookworm-slim (mmdebstrap minbase)"
    mmdebstrap --variant=minbase bookworm "$work/slim.tar"
    docker import "$work/slim.tar" debian:bookworm-slim >/dev/null
fi
if [ "$fresh" = 1 ] || ! have rust:1-bookworm; then
    say "making rust:1-bookworm (minbase, gcc, git, this host's stable toolchain)"
    mmdebstrap --variant=minbase \
        --include=ca-certificates,gcc,libc6-dev,make,git,pkg-config \
        bookworm "$work/build.tar"
    docker import "$work/build.tar" qexp-standin/bookworm-build >/dev/null
    toolchain="$(rustup toolchain list | awk '/^stable-/ {print $1; exit}')"
    mkdir -p "$work/rust/rustup/toolchains" "$work/rust/cargo/bin"
    cp -a "$HOME/.rustup/toolchains/$toolchain" "$work/rust/rustup/toolchains/"
    printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "minimal"\n' "$toolchain" \
        >"$work/rust/rustup/settings.toml"
    for tool in cargo rustc rustdoc; do
        ln -s "/usr/local/rustup/toolchains/$toolchain/bin/$tool" "$work/rust/cargo/bin/$tool"
    done
    # A host behind a TLS-inspecting proxy trusts its CA; the build stage
    # fetches crates through the same proxy, so it is given those CAs too.
    mkdir -p "$work/rust/extra-ca"
    cp /usr/local/share/ca-certificates/*.crt "$work/rust/extra-ca/" 2>/dev/null || true
    cat >"$work/rust/Dockerfile" <<'EOF'
FROM qexp-standin/bookworm-build
COPY extra-ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
COPY rustup /usr/local/rustup
COPY cargo /usr/local/cargo
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EOF
    docker build -q -t rust:1-bookworm "$work/rust" >/dev/null
fi

# 2. The Dockerfile, as it is.
say "docker build -t $tag ."
start=$SECONDS
docker build -t "$tag" .
say "built $tag in $((SECONDS - start)) s; $(docker image inspect -f '{{.Size}}' "$tag") bytes"

# 3. The quickstart, as the image's user in its working folder.
say "docker run $tag run experiments/quickstart.toml"
docker run --rm "$tag" run experiments/quickstart.toml --no-report | tail -n 3
docker run --rm --entrypoint id "$tag"

# 4. Two shards, with the arguments `qexp kube` writes into the Job (read
# from its output), shard 0 reached by its pod's DNS name (a network alias
# here, the headless Service there), both measuring one simulator served
# in a container of its own (a sim: target would be one per shard, which
# `qexp kube` refuses), then a merge and a report.
plan=experiments/quickstart.toml
run_id="rehearsal-$(date +%s)"
args="$(docker run --rm "$tag" kube "$plan" --shards 2 --image "$tag" --run-id "$run_id" \
    --target "http://$net-sim:8000" 2>/dev/null |
    awk '/^ *- args:/ { on = 1; next } on && /^ *command:/ { on = 0 } on { print $2 }' |
    tr -d '"' | tr '\n' ' ')"
rendezvous="$(echo "$args" | sed -E 's/.*--rendezvous ([^ :]+):.*/\1/')"
say "shard arguments: $args"
chmod 755 "$work"
mkdir -p "$work/results" "$work/plan"
cp "$plan" "$work/plan/plan.toml"
# The Job's fsGroup makes the claim the pods' user's; here the folder is given to it.
chown 65532:65532 "$work/results"
docker network create "$net" >/dev/null
docker run -d --name "$net-sim" --network "$net" --network-alias "$net-sim" "$tag" \
    sim --profile fast --host 0.0.0.0 --port 8000 >/dev/null
shard() {
    local alias=()
    [ "$1" = 0 ] && alias=(--network-alias "$rendezvous")
    # shellcheck disable=SC2086 # the arguments are words, as in the Job
    docker run -d --name "$net-s$1" --network "$net" "${alias[@]}" \
        -e JOB_COMPLETION_INDEX="$1" \
        -v "$work/plan:/plan:ro" -v "$work/results:/results" \
        "$tag" $args >/dev/null
}
say "two shards on network $net, shard 0 as $rendezvous"
shard 0
shard 1
for k in 0 1; do
    rc="$(docker wait "$net-s$k")"
    docker logs "$net-s$k" 2>&1 | tail -n 2
    if [ "$rc" != 0 ]; then
        say "shard $k exited $rc"
        exit 1
    fi
done
say "merging"
docker run --name "$net-merge" -v "$work/results:/results" --entrypoint sh "$tag" -c \
    "qexp merge /results/quickstart/$run_id-shard* --out /results/quickstart/$run_id \
     && qexp report /results/quickstart/$run_id --out-dir /results/reports >/dev/null \
     && ls /results/reports/quickstart/$run_id" | tail -n 5
say "done: the Dockerfile builds, its image runs a plan, two shards and a merge"
