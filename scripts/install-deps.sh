#!/usr/bin/env bash
# Install what zfsperf needs and is missing: Debian packages (as root), then a .venv with
# the package and its Python dependencies. Safe to run again: it only installs what is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# --test: also what the test suite needs (sshd for the ssh target, chromium for report.html,
# a PostgreSQL server for the history store, perf for --profile, QEMU for the QMP tests of build
# turns, which run in the host lane beside the guest lane that would otherwise install it)
TEST=0
[ "${1:-}" = "--test" ] && TEST=1

need=()
command -v zfs-fuse >/dev/null 2>&1 || [ -x /sbin/zfs-fuse ] || need+=(zfs-fuse)
command -v fio >/dev/null 2>&1 || need+=(fio)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ "$TEST" = 1 ]; then
    [ -x /usr/sbin/sshd ] || need+=(openssh-server)
    command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
    command -v tmux >/dev/null 2>&1 || need+=(tmux)                    # the hangup tests close a real terminal
    command -v sfdisk >/dev/null 2>&1 || need+=(fdisk)                  # the DISKS tests partition loop devices
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v perf >/dev/null 2>&1 || need+=(linux-perf)               # run --profile's profiler
    command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)   # two_qemus (test_build_turns.py)
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)   # the history store's server
fi
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "zfsperf needs: ${need[*]} (install them as root; apt-get on Debian)" >&2
        exit 1
    fi
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # packages with daemons (openssh-server) must not start them on this host: the tests start
    # their own, by pid, on 127.0.0.1
    policy=/usr/sbin/policy-rc.d
    made_policy=0
    if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; made_policy=1; fi
    apt-get install -y -q --no-install-recommends "${need[@]}" || { [ $made_policy = 1 ] && rm -f "$policy"; exit 1; }
    [ $made_policy = 1 ] && rm -f "$policy"
fi

stamp=.venv/.zfsperf-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    [ -x .venv/bin/python ] || "$PY" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test]'
    touch "$stamp"
fi
# shell completion (bash, zsh) and the man page, generated from the argument parser: as root, where
# bash-completion, zsh and man find them; else said how
if [ "$(id -u)" = 0 ]; then
    .venv/bin/python -m zfsperf.shellfiles install >/dev/null || echo "zfsperf: completion and man page not installed" >&2
fi
