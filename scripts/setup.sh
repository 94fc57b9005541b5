#!/usr/bin/env bash
# Installs the Debian packages hspmd needs, when missing. Nothing is downloaded any other way.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang clang-format libclang-rt-14-dev llvm git
  antlr4 libantlr4-runtime-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libboost-graph-dev libboost-context-dev
  libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin libopenblas-dev coinor-libcbc-dev pkg-config libjemalloc-dev
  python3-torch  # test-only: the PyTorch oracle of tests/torch
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} Debian packages present"
fi
