#!/usr/bin/env bash
# Installs what sluice needs on a fresh Debian 12 machine: both MPIs side by side, their
# Fortran wrappers, libclang for bindgen, the hardware-detection libraries, Scotch (the
# mapper's graph mapping: sluice-map --heuristic), matplotlib for
# benchmark plots, and iproute2/util-linux for the emulated cluster (scripts/cluster.sh). Skips apt entirely when everything is already present.
set -euo pipefail

PKGS=(
  build-essential pkg-config gfortran
  libopenmpi-dev openmpi-bin
  libmpich-dev mpich
  libclang-dev
  libhwloc-dev libudev-dev
  libscotch-dev
  libibverbs-dev librdmacm-dev rdma-core
  python3-matplotlib
  iproute2 util-linux
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo not found; install a Rust toolchain (rustup) first" >&2
  exit 1
fi
echo "install-deps: ok ($(mpirun.openmpi --version | head -1); $(mpichversion 2>/dev/null | head -1 | tr -s ' '))"
