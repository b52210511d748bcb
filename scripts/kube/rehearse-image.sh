#!/usr/bin/env bash
# The Dockerfile's two stages, rehearsed where there is no Docker engine:
#   - build stage: its cargo command, on what a build context holds (the
#     tracked files, less .dockerignore's paths), with this machine's Rust;
#   - runtime stage: a Debian bookworm root made by mmdebstrap (variant
#     minbase with ca-certificates, as debian:bookworm-slim), the
#     Dockerfile's files copied in as it copies them, then qexp run in it
#     by chroot as user 65532, with HOME=/ and no other environment:
#       1. `docker run IMAGE run experiments/quickstart.toml`, in the image's
#          working folder;
#       2. two shards with the arguments `qexp kube` writes into the Job
#          (the plan read-only at /plan, results at /results, shard 0's pod
#          name resolved through the root's /etc/hosts), both measuring one
#          `qexp sim` on 127.0.0.1:$QEXP_SIM_PORT (default 18431), then
#          `qexp merge`.
# Keep the copies below in step with the Dockerfile.
#
# Needs root (chroot, mounts) and mmdebstrap (apt-get install mmdebstrap);
# a Debian mirror is reached once, to make the root.
#
#   scripts/kube/rehearse-image.sh [DIR=/tmp/qexp-image]
set -euo pipefail
cd "$(dirname "$0")/../.."

dir="${1:-/tmp/qexp-image}"
root="$dir/root"
context="$dir/context"
export CARGO_TARGET_DIR="${QEXP_BENCH_TARGET_DIR:-$HOME/.cache/qexp-target-release}"

if [ "$(id -u)" != 0 ] || ! command -v mmdebstrap >/dev/null; then
    echo "rehearse-image: needs root and mmdebstrap (apt-get install mmdebstrap)" >&2
    exit 2
fi

# Build stage.
rm -rf "$context" && mkdir -p "$context"
git archive HEAD | tar -x -C "$context"
# The archive keeps the commit's times, and cargo names a workspace crate's
# artifacts after its path inside the workspace: a checkout of another
# commit built into the same target folder since would pass for fresh.
find "$context" -type f -exec touch {} +
(cd "$context" && grep -v '^#' .dockerignore | xargs -r rm -rf)
(cd "$context" && cargo build --release --locked --bin qexp)
bin="$CARGO_TARGET_DIR/release/qexp"

# Runtime stage.
if [ ! -x "$root/bin/sh" ]; then
    mmdebstrap --variant=minbase --include=ca-certificates bookworm "$root"
fi
install -m 755 "$bin" "$root/usr/local/bin/qexp"
rm -rf "$root/opt/qexp" && mkdir -p "$root/opt/qexp"
cp -r "$context/experiments" "$root/opt/qexp/experiments"
chown 65532:65532 "$root/opt/qexp"

# Runs $1 in the root as the image's user, from its working folder.
as_image() {
    unshare --mount --pid --fork sh -c '
        mount -t proc proc "$0/proc" && mount --rbind /dev "$0/dev"
        env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/ \
            /usr/sbin/chroot --userspec=65532:65532 "$0" /bin/sh -c "cd /opt/qexp && $1"
    ' "$root" "$1"
}

echo "rehearse-image: docker run IMAGE run experiments/quickstart.toml" >&2
as_image 'qexp run experiments/quickstart.toml'
ls "$root/opt/qexp/reports/quickstart"/*/report.md

echo "rehearse-image: two shards as the Job runs them" >&2
run_id="rehearse-$(date +%s)"
# The pods' arguments, as `qexp kube` writes them into the Job.
# One simulator for both shards (a sim: target would be one per shard,
# which `qexp kube` refuses).
sim_port="${QEXP_SIM_PORT:-18431}"
"$bin" sim --profile fast --port "$sim_port" >"$dir/sim.log" 2>&1 &
sim=$!
trap 'kill "$sim" 2>/dev/null || true' EXIT
args="qexp $("$bin" kube "$context/experiments/quickstart.toml" --shards 2 \
    --image qexp:rehearse --run-id "$run_id" --target "http://127.0.0.1:$sim_port" 2>/dev/null |
    awk '/^ *- args:/ { on = 1; next } on && /^ *command:/ { on = 0 } on { print $2 }' |
    tr -d '"' | tr '\n' ' ')"
rendezvous="$(echo "$args" | sed -E 's/.*--rendezvous ([^ :]+):.*/\1/')"
rm -rf "$root/plan" "$root/results"
mkdir -p "$root/plan" "$root/results"
cp "$context/experiments/quickstart.toml" "$root/plan/plan.toml"
chmod 555 "$root/plan" && chmod 444 "$root/plan/plan.toml"
# The Job's fsGroup makes the claim the user's; here the folder is given to it.
chown 65532:65532 "$root/results"
# The headless Service's DNS name of shard 0's pod.
touch "$root/etc/hosts"
grep -q " $rendezvous\$" "$root/etc/hosts" || echo "127.0.0.1 $rendezvous" >>"$root/etc/hosts"
echo "rehearse-image: $args" >&2
as_image "JOB_COMPLETION_INDEX=0 $args" >"$dir/shard0.log" 2>&1 &
shard0=$!
as_image "JOB_COMPLETION_INDEX=1 $args" >"$dir/shard1.log" 2>&1 || {
    echo "rehearse-image: shard 1 failed, see $dir/shard1.log" >&2
    exit 1
}
wait "$shard0" || {
    echo "rehearse-image: shard 0 failed, see $dir/shard0.log" >&2
    exit 1
}
rm -rf "$dir/merged" "$dir/reports"
"$bin" merge "$root/results/quickstart/$run_id"-shard* --out "$dir/merged"
"$bin" report "$dir/merged" --out-dir "$dir/reports" >/dev/null
echo "rehearse-image: ok ($dir)" >&2
