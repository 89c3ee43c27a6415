#!/usr/bin/env bash
# Acceptance check of `make setup` on a fresh Debian (issue 20): a debootstrapped root of the host's suite
# with python3, python3-venv, make, git, ca-certificates and a NodeSource-like `nodejs` package (it ships
# node and npm, Provides/Conflicts/Replaces: npm) and none of AgentRL's packages. The committed HEAD of a
# checkout is cloned into it and `make setup` runs there as root with no stdin; then the table must be all
# green (`_system_deps.py check --strict`), Debian's npm must not have been installed, Ruffle must be in
# ~/.cache/agentrl/ruffle, and `import agentrl, torch` and tests/test_system_deps.py must pass inside.
#
#   sudo scripts/chroot_setup_check.sh [CHECKOUT]      # CHECKOUT: a git checkout (default: this one)
#
# Needs root, debootstrap, and the host's node and npm (`which node npm`). The pristine root is built once
# under $AGENTRL_CHROOT_DIR/base (default /var/tmp/agentrl-chroot) and copied to .../root for each run; the
# log is .../setup.log. The host's pip configuration (pip.conf files, PIP_* variables, local wheel dirs and
# file:// indexes, bind-mounted read-only at the same paths), its extra CA certificates and the variables
# naming its CA bundle and proxies, its npmrc files and /etc/resolv.conf go in, as the machine's environment. Like a Debian container image, the root has a
# policy-rc.d that stops package scripts from starting services (dockerd) on the host's kernel. Mounts are
# undone and processes left inside the root are ended on exit, failure included.
set -euo pipefail

CHECKOUT=$(cd "${1:-$(dirname "$0")/..}" && git rev-parse --show-toplevel)
DIR=${AGENTRL_CHROOT_DIR:-/var/tmp/agentrl-chroot}
BASE=$DIR/base
ROOT=$DIR/root
LOG=$DIR/setup.log
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
MIRROR=${AGENTRL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${AGENTRL_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
PATH_IN=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap, chroot, mount)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "needs debootstrap: apt-get install -y debootstrap" >&2; exit 2; }
NODE=$(command -v node) && NPM=$(command -v npm) || { echo "needs the host's node and npm on PATH" >&2; exit 2; }

MOUNTS=()
cleanup() {
    local pid
    # Anything still running inside the root (a daemon a package script started): end it, by pid.
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$ROOT" ] && kill "$pid" 2>/dev/null && echo "ended pid $pid"
    done
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || echo "could not unmount ${MOUNTS[i]}" >&2
    done
    if grep -q " $ROOT/" /proc/mounts; then echo "still mounted under $ROOT:" >&2; grep " $ROOT/" /proc/mounts >&2; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() {  # bind SOURCE TARGET [ro]
    mkdir -p "$2"
    mount --bind "$1" "$2"
    MOUNTS+=("$2")
    [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
    return 0
}

# The host's variables that say how it reaches the network: pip's settings, the CA bundle TLS clients are
# told to trust (behind a TLS-inspecting egress proxy, `npm install` needs NODE_EXTRA_CA_CERTS: npm's
# `cafile` setting alone does not reach its registry fetches), and proxies.
HOST_ENV='^(PIP_[A-Z_]+|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_SSL_CAINFO|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)='

in_root() {  # a clean login environment plus the host's network variables, no stdin
    local host_env
    mapfile -t host_env < <(env | grep -E "$HOST_ENV" || true)
    chroot "$ROOT" /usr/bin/env -i HOME=/root PATH="$PATH_IN" LANG=C.UTF-8 TERM=dumb "${host_env[@]}" \
        /bin/bash -lc "$1" </dev/null
}

nodejs_deb() {  # a NodeSource-like nodejs .deb from the host's node and npm
    local pkg=$DIR/nodejs-pkg version
    version=$("$NODE" --version | sed 's/^v//')-1nodesource1
    rm -rf "$pkg" && mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/usr/lib/node_modules"
    cp "$NODE" "$pkg/usr/bin/node"
    cp -a "$(dirname "$(readlink -f "$NPM")")/.." "$pkg/usr/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$pkg/usr/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$pkg/usr/bin/npx"
    cat >"$pkg/DEBIAN/control" <<EOF
Package: nodejs
Version: $version
Architecture: $(dpkg --print-architecture)
Maintainer: AgentRL acceptance check <nobody@localhost>
Depends: libc6, libstdc++6, libgcc-s1, python3, ca-certificates
Provides: nodejs-dev, npm
Conflicts: nodejs-dev, npm
Replaces: nodejs-dev, npm
Section: web
Priority: optional
Description: Node.js and npm in one package, as NodeSource ships them (a copy of the host's)
EOF
    dpkg-deb --root-owner-group --build "$pkg" "$DIR/nodejs_${version}.deb" >/dev/null
    echo "$DIR/nodejs_${version}.deb"
}

build_base() {
    local tmp=$DIR/base.tmp deb
    rm -rf "$tmp" && mkdir -p "$DIR"
    echo "== debootstrap $SUITE into $BASE"
    debootstrap --variant=minbase --include=python3,python3-venv,make,git,ca-certificates \
        "$SUITE" "$tmp" "$MIRROR"
    rm -f "$tmp/etc/apt/sources.list"
    cat >"$tmp/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    printf '#!/bin/sh\n# As in Debian container images: package scripts start no services.\nexit 101\n' \
        >"$tmp/usr/sbin/policy-rc.d"
    chmod 755 "$tmp/usr/sbin/policy-rc.d"
    deb=$(nodejs_deb)
    cp "$deb" "$tmp/tmp/nodejs.deb"
    chroot "$tmp" /usr/bin/env -i PATH="$PATH_IN" dpkg -i /tmp/nodejs.deb
    rm -f "$tmp/tmp/nodejs.deb"
    # A container image ships no package lists: the first apt-get install must find that out by itself.
    rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/archives/*.deb
    mv "$tmp" "$BASE"
}

[ -d "$BASE" ] || build_base
echo "== fresh copy of $BASE at $ROOT"
rm -rf "$ROOT"
cp -a "$BASE" "$ROOT"

# The machine's environment: DNS, extra CA certificates, npm's and pip's configuration and local wheels.
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
    chroot "$ROOT" /usr/bin/env -i PATH="$PATH_IN" update-ca-certificates >/dev/null
fi
for file in /etc/npmrc /usr/etc/npmrc /etc/pip.conf /etc/xdg/pip /root/.config/pip; do
    [ -e "$file" ] && mkdir -p "$ROOT$(dirname "$file")" && cp -a "$file" "$ROOT$(dirname "$file")/"
done

bind /proc "$ROOT/proc"
bind /sys "$ROOT/sys"
bind /dev "$ROOT/dev"
bind /dev/pts "$ROOT/dev/pts"
# Local directories pip reads (find-links, file:// indexes: the folder above simple/, where files/ lies).
for word in $( (pip3 config list 2>/dev/null || true; env | grep -E '^PIP_' || true) | sed "s/^[^=]*=//; s/'//g"); do
    path=${word#file://}
    [ "${path%/simple}" != "$path" ] && path=${path%/simple}
    if [ "${path#/}" != "$path" ] && [ -d "$path" ] && ! mountpoint -q "$ROOT$path"; then
        bind "$path" "$ROOT$path" ro
        echo "bound $path (read-only) for pip"
    fi
done

echo "== clone $CHECKOUT at $(git -C "$CHECKOUT" rev-parse --short HEAD) into $ROOT/src"
git clone -q "$CHECKOUT" "$ROOT/src"
git -C "$ROOT/src" checkout -q "$(git -C "$CHECKOUT" rev-parse HEAD)"
in_root 'dpkg-query -W -f="\${Package} \${Version} \${Status}\n" nodejs; command -v node npm; npm --version'

echo "== make setup (log: $LOG)"
start=$(date +%s)
status=0
in_root 'cd /src && make setup' >"$LOG" 2>&1 || status=$?
elapsed=$(($(date +%s) - start))
tail -n 40 "$LOG"
echo "== make setup: exit $status after ${elapsed}s"

echo "== checks inside the root"
failures=0
check() { echo "-- $1"; in_root "$2" || { echo "FAILED: $1"; failures=$((failures + 1)); }; }
check "the table is all green" 'cd /src && python3 agentrl/_system_deps.py check --strict'
check "nodejs kept, Debian npm not installed" \
    'dpkg-query -W -f="\${Package} \${Version}\n" nodejs && ! dpkg-query -W -f="\${Status}\n" npm 2>/dev/null | grep -q "^install ok"'
check "Ruffle installed" 'ls -d /root/.cache/agentrl/ruffle/node_modules/@ruffle-rs/ruffle'
check "import agentrl, torch" 'cd /src && .venv/bin/python -c "import agentrl, torch; print(\"agentrl\", agentrl.__file__, \"torch\", torch.__version__)"'
check "tests/test_system_deps.py" 'cd /src && .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_system_deps.py 2>&1 | tail -n 3'
check "make setup again is a no-op" 'cd /src && s=$(date +%s) && make setup >/tmp/again.log 2>&1 && tail -n 1 /tmp/again.log && echo "$(( $(date +%s) - s ))s"'
[ "$status" = 0 ] || failures=$((failures + 1))
echo "== $([ "$failures" = 0 ] && echo PASSED || echo "FAILED ($failures)"): make setup ${elapsed}s, exit $status"
exit $((failures > 0))
