#!/usr/bin/env bash
# Installs Debian's Slurm (slurmctld, slurmd, the client commands) and munge for the tests that
# start a real one-node Slurm of their own (tests/fleet/slurm_cluster.py). Re-running it is a
# no-op once the binaries are there.
#
# Why each step:
# - apt-get update only when a package is missing: the lists are slow to fetch and a no-op
#   run should touch nothing;
# - a temporary policy-rc.d while installing: the packages' postinst scripts would otherwise
#   start munged (on /etc/munge's key and /run/munge's socket) and try slurmctld/slurmd on
#   /etc/slurm, none of which the tests use; the tests start their own daemons, with every
#   path and port of their own;
# - where systemd is init, the same services are disabled and stopped after a fresh install,
#   so that no system-wide daemon lingers beside the tests' own.
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge)
BINARIES=(slurmctld slurmd sbatch squeue scontrol sinfo scancel munged mungekey)

missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
for bin in "${BINARIES[@]}"; do
    PATH="$PATH:/usr/sbin:/sbin" command -v "$bin" >/dev/null || { missing=("${PACKAGES[@]}"); break; }
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

export DEBIAN_FRONTEND=noninteractive
POLICY=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e "$POLICY" ]]; then
    printf '#!/bin/sh\n# Left by speed-matrix scripts/install-slurm.sh while it installs; removed after.\nexit 101\n' >"$POLICY"
    chmod 755 "$POLICY"
    own_policy=1
    trap 'rm -f "$POLICY"' EXIT
fi

# Lists are fetched only if apt does not know the packages yet (a fresh machine).
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "$(ps -p 1 -o comm= 2>/dev/null)" == systemd ]]; then
    for service in slurmctld slurmd munge; do
        systemctl disable --now "$service" >/dev/null 2>&1 || true
    done
fi
[[ $own_policy -eq 1 ]] && rm -f "$POLICY"
exit 0
