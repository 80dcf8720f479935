#!/bin/sh
# Installs Harvey from its release archives, checking the archive against
# SHA256SUMS before anything is installed.
#
#   curl -fsSL https://github.com/harvey-agent/harvey/releases/latest/download/install.sh | sh
#   sh install.sh --from ~/Downloads        # offline: the archive and SHA256SUMS already there
#   sh install.sh --dir /opt/bin            # somewhere other than ~/.local/bin
#
# Where Ubuntu (23.10 and later) refuses user namespaces to programs
# without an AppArmor profile, Harvey's sandbox would run without them;
# the installer then offers to install the profile `harvey sandbox
# apparmor` prints (it asks, and needs sudo; HARVEY_APPARMOR=yes or no
# answers for it).
#
# It picks the archive for this machine — on a Raspberry Pi with a 64-bit
# kernel and a 32-bit userland (uname -m says aarch64, the programs are
# armhf) the 32-bit ARM one —, needs no sudo, and leaves nothing behind when
# a check fails. POSIX sh; uses curl or wget, tar, gzip, and sha256sum or
# shasum or openssl.
set -eu

base_url=${HARVEY_DOWNLOAD_URL:-https://github.com/harvey-agent/harvey/releases/latest/download}
dir=${HARVEY_INSTALL_DIR:-${HOME:?HOME is not set}/.local/bin}
from=""

fail() { echo "harvey install: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --from) [ $# -ge 2 ] || fail "--from needs a directory (or an archive) already downloaded"; from=$2; shift 2 ;;
    --dir) [ $# -ge 2 ] || fail "--dir needs a directory"; dir=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown option $1 (use --from DIR, --dir DIR)" ;;
  esac
done

# target is the archive's name for this machine: harvey_OS_ARCH.
target() {
  os=$(uname -s)
  case $os in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) fail "no release for $os (build from source: see README)" ;;
  esac
  m=$(uname -m)
  case $m in
    x86_64|amd64) arch=amd64 ;;
    aarch64|arm64)
      arch=arm64
      # A 64-bit kernel under a 32-bit userland (Raspberry Pi OS's usual
      # install): the 32-bit programs say what the system is.
      if [ "$os" = linux ]; then
        userland=$(dpkg --print-architecture 2>/dev/null || true)
        bits=$(getconf LONG_BIT 2>/dev/null || true)
        if [ "$userland" = armhf ] || [ "$userland" = armel ] || [ "$bits" = 32 ]; then
          arch=armv7
        fi
      fi ;;
    armv8l|armv7l|armv7*) arch=armv7 ;;
    armv6l|armv6*) arch=armv6 ;;
    *) fail "no release for the $m processor (build from source: see README)" ;;
  esac
  echo "harvey_${os}_${arch}"
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1" | cut -d' ' -f1
  elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 "$1" | sed 's/.*= *//'
  else fail "no sha256sum, shasum or openssl to check the archive with"
  fi
}

fetch() { # URL FILE
  if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then wget -q -O "$2" "$1"
  else fail "no curl or wget to download with (or use --from DIR with the archive already downloaded)"
  fi
}

name=$(target).tar.gz
work=$(mktemp -d "${TMPDIR:-/tmp}/harvey-install.XXXXXX")
trap 'rm -rf "$work" "$dir/.harvey.new.$$"' EXIT INT TERM

if [ -n "$from" ]; then
  if [ -f "$from" ]; then
    [ "$(basename "$from")" = "$name" ] || fail "$from is not this machine's archive ($name)"
    from=$(dirname "$from")
  fi
  [ -f "$from/$name" ] || fail "no $name in $from (this machine needs that archive)"
  [ -f "$from/SHA256SUMS" ] || fail "no SHA256SUMS in $from: the archive cannot be checked"
  cp "$from/$name" "$from/SHA256SUMS" "$work/"
else
  fetch "$base_url/SHA256SUMS" "$work/SHA256SUMS" || fail "could not download $base_url/SHA256SUMS"
  fetch "$base_url/$name" "$work/$name" || fail "could not download $base_url/$name"
fi

want=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1 }' "$work/SHA256SUMS")
[ -n "$want" ] || fail "SHA256SUMS does not list $name"
got=$(sha256 "$work/$name")
[ "$got" = "$want" ] || fail "checksum mismatch for $name (got $got, SHA256SUMS says $want): nothing was installed"

mkdir "$work/x"
tar -xzf "$work/$name" -C "$work/x" harvey || fail "$name does not hold harvey"
mkdir -p "$dir"
cp "$work/x/harvey" "$dir/.harvey.new.$$"
chmod 755 "$dir/.harvey.new.$$"
mv -f "$dir/.harvey.new.$$" "$dir/harvey"
echo "installed $("$dir/harvey" --version 2>/dev/null || echo harvey) to $dir/harvey"
case ":${PATH:-}:" in
  *":$dir:"*) ;;
  *) echo "add it to your PATH: echo 'export PATH=\"$dir:\$PATH\"' >> ~/.profile (then open a new shell)" ;;
esac

# The AppArmor profile, where Ubuntu's restriction would leave the sandbox
# without namespaces (HARVEY_PROC_SYS: tests point it at a fixture).
sysdir=${HARVEY_PROC_SYS:-/proc/sys}
if [ "$(cat "$sysdir/kernel/apparmor_restrict_unprivileged_userns" 2>/dev/null)" = 1 ]; then
  echo "This system refuses user namespaces to programs without an AppArmor profile: Harvey's sandbox"
  echo "would run in its Landlock-only mode (no registry proxy, caches read-only, your unix sockets reachable)."
  answer=${HARVEY_APPARMOR:-}
  if [ -z "$answer" ] && [ -r /dev/tty ] && { : </dev/tty; } 2>/dev/null; then
    printf "Install a profile that allows them for %s alone (sudo)? [y/N] " "$dir/harvey" >/dev/tty
    read -r answer </dev/tty || answer=no
  fi
  case $answer in
    y|Y|yes|YES)
      "$dir/harvey" sandbox apparmor 2>/dev/null | sudo tee /etc/apparmor.d/harvey >/dev/null &&
        sudo apparmor_parser -r /etc/apparmor.d/harvey &&
        echo "installed /etc/apparmor.d/harvey: harvey sandbox says which mode you have" ||
        echo "the profile was not installed; harvey sandbox apparmor prints it and how to install it" ;;
    *) echo "not installed; to do it later: harvey sandbox apparmor (it prints the profile and the two commands)" ;;
  esac
fi
