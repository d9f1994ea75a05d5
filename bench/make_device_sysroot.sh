#!/usr/bin/env bash
# Builds .carry/model-sysroot.tar.xz (ignored by git), the PCRE2, ICU and
# pkgconf the GPU machine lacks for the full tree (bench/runtime_device.sh
# unpacks it there): this machine's Debian packages, downloaded with apt and
# unpacked, without docs and static libraries (about 10 MB, so the device
# call's 64 MiB tree limit holds). Run on the development machine:
#   bench/make_device_sysroot.sh
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libpcre2-dev
          libicu72 libicu-dev pkgconf pkgconf-bin libpkgconf3)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${packages[@]}" >/dev/null)
mkdir "$work/root"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/lintian"
find "$work/root" -name '*.a' -delete
mkdir -p .carry
tar cJf .carry/model-sysroot.tar.xz.tmp -C "$work/root" .
mv .carry/model-sysroot.tar.xz.tmp .carry/model-sysroot.tar.xz
echo ".carry/model-sysroot.tar.xz: $(du -h .carry/model-sysroot.tar.xz | cut -f1)"
