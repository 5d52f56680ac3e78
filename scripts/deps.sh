#!/usr/bin/env bash
# Installs the Debian 12 packages mpiscope needs, when missing. Safe to run repeatedly.
set -euo pipefail

packages=(
  build-essential pkg-config
  openmpi-bin libopenmpi-dev      # Open MPI 4.1: the default mpicc/mpirun
  mpich libmpich-dev              # MPICH 4.0: mpicc.mpich / mpirun.mpich
  gfortran                        # Fortran test programs
  libclang-dev                    # bindgen reads mpi.h through libclang
  libopenblas0                    # dgemm/dtrsm timed by `mpiscope calibrate` (opened at run time)
  hpcc                            # a real MPI application (HPL, PTRANS, FFT, ...)
  iproute2                        # ip netns and tc: scripts/netlab.sh and crates/cli/tests/cli/netlab.rs
  gromacs                         # gmx_mpi: a short mdrun in crates/cli/tests/cli/apps.rs (LAMMPS, for scripts/bench-apps.sh only, is installed by that script)
  libsimgrid-dev                  # smpirun: the differential oracle for exports and replay
  libopen-trace-format2-10        # OTF2 export (libotf2, opened at run time)
  otf2-tools                      # the OTF2 export's check (otf2-print)
  python3-otf2                    # the OTF2 export's check (reads archives with `import otf2`)
  vite xvfb xauth                 # the OTF2 export's check in a viewer (ViTE under Xvfb)
  chromium                        # renders the HTML reports in tests (headless)
  slurm-wlm munge                 # a one-machine SLURM for crates/cli/tests/cli/slurm.rs (scripts/slurm.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "deps: cargo is not installed; install Rust from https://rustup.rs" >&2
  exit 1
fi
