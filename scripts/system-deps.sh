#!/usr/bin/env bash
# The system packages memdb's build needs, installed when missing (CI machines start bare):
# libjpeg-turbo's TurboJPEG library and headers (the `turbojpeg` crate links it through
# pkg-config), a C++ compiler (cargo-fuzz's sanitizer runtime), and `unshare` and `ip` (util-linux,
# iproute2: the tests run in a network namespace with only loopback). Debian/Ubuntu only.
set -euo pipefail
need=()
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists libturbojpeg 2>/dev/null || need+=(libturbojpeg0-dev)
command -v c++ >/dev/null || need+=(g++)
command -v unshare >/dev/null || need+=(util-linux)
command -v ip >/dev/null || need+=(iproute2)
[ ${#need[@]} -eq 0 ] && exit 0
echo "memdb: installing system packages: ${need[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "memdb: need root or sudo to install ${need[*]}" >&2; exit 1; }
  sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
