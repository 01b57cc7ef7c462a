#!/usr/bin/env bash
# Install what zfsperf needs and is missing: Debian packages (as root), then a .venv with
# the package and its Python dependencies. Safe to run again: it only installs what is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

need=()
command -v zfs-fuse >/dev/null 2>&1 || [ -x /sbin/zfs-fuse ] || need+=(zfs-fuse)
command -v fio >/dev/null 2>&1 || need+=(fio)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "zfsperf needs: ${need[*]} (install them as root; apt-get on Debian)" >&2
        exit 1
    fi
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi

stamp=.venv/.zfsperf-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    [ -x .venv/bin/python ] || "$PY" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test]'
    touch "$stamp"
fi
