#!/usr/bin/env bash
# Installs what the WebGPU backend (nascent/backends/webgpu/) needs: the
# Vulkan loader and Mesa's lavapipe (a Vulkan driver on the CPU, so the
# backend's tests run on machines without a GPU), and wgpu-native, whose
# library and headers (webgpu.h, wgpu.h) ship inside PyPI's pinned `wgpu`
# wheel: it is unpacked into build/webgpu-sdk, where cmake/webgpu.cmake
# looks. Safe to run again: it returns at once when both are in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="${NASCENT_WGPU_VERSION:-0.32.0}"
sdk=build/webgpu-sdk

packages=(libvulkan1 mesa-vulkan-drivers)
missing=()
for p in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup_webgpu: installing ${missing[*]}"
  sudo=()
  if ((EUID != 0)); then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [[ -f "$sdk/VERSION" && "$(cat "$sdk/VERSION")" == "$version" &&
      -f "$sdk/lib/libwgpu_native.so" && -f "$sdk/include/webgpu.h" ]]; then
  echo "setup_webgpu: wgpu-native from wgpu $version in $sdk"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --platform manylinux_2_28_x86_64 --python-version 3.11 \
  -d "$tmp" "wgpu==$version"
wheel="$(ls "$tmp"/wgpu-"$version"-*.whl)"
python3 - "$wheel" "$tmp/x" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for n in ("libwgpu_native-release.so", "webgpu.h", "wgpu.h"):
        z.extract("wgpu/resources/" + n, sys.argv[2])
PY
rm -rf "$sdk"
mkdir -p "$sdk/lib" "$sdk/include/webgpu"
res="$tmp/x/wgpu/resources"
cp "$res/libwgpu_native-release.so" "$sdk/lib/libwgpu_native.so"
# wgpu.h includes "webgpu.h"; the include folder has both, also as
# webgpu/webgpu.h (the path other projects use).
cp "$res/webgpu.h" "$res/wgpu.h" "$sdk/include/"
cp "$res/webgpu.h" "$res/wgpu.h" "$sdk/include/webgpu/"
echo "$version" > "$sdk/VERSION"
echo "setup_webgpu: unpacked wgpu-native from wgpu $version into $sdk"
