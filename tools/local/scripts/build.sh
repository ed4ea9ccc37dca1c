#!/usr/bin/env bash
# `make build`: the release Lambda artifact of each function named on the
# command line (`bootstrap` in a zip, as Lambda takes it), built by
# `cargo lambda build` with the workspace's release profile (LTO, one
# codegen unit, stripped), then a table of their sizes.
#
#   ARCH unset      this machine's architecture with plain cargo and the
#                   system linker (a Linux host; x86_64 here)
#   ARCH=arm64      aarch64-unknown-linux-gnu (Graviton, the template's
#   ARCH=x86_64     default) or x86_64, cross-linked by Zig (the ziglang
#                   package that cargo-lambda brings into .venv); the
#                   target's standard library comes from rustup, or else
#                   from Debian's rustc-web (RUSTC=/usr/bin/rustc)
#
# Artifacts: ${CARGO_TARGET_DIR:-target}/lambda/<function>/bootstrap.zip.
set -euo pipefail
cd "$(dirname "$0")/../../.."
source tools/local/scripts/env.sh
# cargo-lambda, and for ARCH=arm64/x86_64 Zig (python -m ziglang), from .venv.
export PATH="$PWD/$VENV/bin:$PATH"

if [ "$#" -eq 0 ]; then
    echo "usage: $0 FUNCTION..." >&2
    exit 2
fi

case "${ARCH:-}" in
"")
    arch=(--compiler cargo)
    triple=$(rustc -vV | sed -n 's/^host: //p')
    ;;
arm64 | aarch64)
    arch=(--arm64)
    triple=aarch64-unknown-linux-gnu
    debian_arch=arm64
    ;;
x86_64 | x86-64 | amd64)
    arch=(--x86-64)
    triple=x86_64-unknown-linux-gnu
    debian_arch=amd64
    ;;
*)
    echo "ARCH=$ARCH: use arm64, x86_64, or nothing for this machine's architecture" >&2
    exit 2
    ;;
esac
if [ -n "${ARCH:-}" ]; then
    # The compiler cargo runs (RUSTC, else rustc) needs the target's std.
    has_std() { [ -d "$("$1" --print sysroot)/lib/rustlib/$triple/lib" ]; }
    if ! has_std "${RUSTC:-rustc}"; then
        echo "==> adding the $triple standard library (rustup target add $triple)"
        if rustup target add "$triple"; then
            :
        elif [ -x /usr/bin/rustc ] && has_std /usr/bin/rustc; then
            # Debian bookworm: rustc-web (bookworm-security) and, by
            # multiarch, libstd-rust-web-dev:<arch> (docs/deploy.md, "Lambda artifacts").
            export RUSTC=/usr/bin/rustc
            echo "==> rustup could not fetch it: using Debian's $("$RUSTC" -V)"
        else
            echo "The $triple standard library is missing and rustup could not fetch it." >&2
            echo "On Debian bookworm: dpkg --add-architecture $debian_arch && apt-get update &&" >&2
            echo "  apt-get install rustc-web libstd-rust-web-dev:$debian_arch, then run this again." >&2
            exit 1
        fi
    fi
    # Checked above for the compiler in use; cargo-lambda's own check only
    # asks rustup (and would try to download into rustup's toolchain).
    arch+=(--skip-target-check)
fi

echo "==> cargo lambda build --release ($triple): $*"
start=$(date +%s)
cargo lambda build --release --locked --output-format zip "${arch[@]}" "${@/#/--package=}"
seconds=$(($(date +%s) - start))

lambda_dir=${CARGO_TARGET_DIR:-target}/lambda
echo
echo "==> Lambda artifacts ($triple, built in ${seconds} s) in $lambda_dir/<function>/bootstrap.zip"
# The runtime (provided.al2023) has glibc 2.34: a binary linked on a newer
# system must not need a newer symbol version (Zig builds pin an older one).
PYTHONPATH=tools/local/scripts "$VENV/bin/python" - "$lambda_dir" "$start" "$@" <<'PY'
import os, re, sys, zipfile
from zip_budget import zip_budget  # tools/local/scripts/zip_budget.py
lambda_dir, start, functions = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
RUNTIME_GLIBC = (2, 34)
print(f"{'function':<20} {'zip bytes':>12} {'bootstrap bytes':>16} {'needs glibc':>12}")
failed = False
for function in functions:
    path = os.path.join(lambda_dir, function, "bootstrap.zip")
    if not os.path.exists(path) or os.path.getmtime(path) < start:
        print(f"{function:<20} {'not built':>12}")
        failed = True
        continue
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("bootstrap")
        binary = archive.read(info)
    versions = {tuple(map(int, v)) for v in re.findall(rb"GLIBC_(\d+)\.(\d+)", binary)}
    glibc = max(versions, default=None)
    shown = ".".join(map(str, glibc)) if glibc else "-"
    print(f"{function:<20} {os.path.getsize(path):>12} {info.file_size:>16} {shown:>12}")
    if os.path.getsize(path) > zip_budget(function):
        print(f"  {function}: over the budget of {zip_budget(function)} bytes zipped")
        failed = True
    if glibc and glibc > RUNTIME_GLIBC:
        print(f"  {function}: needs glibc {shown}, newer than provided.al2023's 2.34: build with ARCH=x86_64 or ARCH=arm64 (Zig)")
        failed = True
sys.exit(1 if failed else 0)
PY
