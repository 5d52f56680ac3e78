# What scripts/bench-apps.sh and scripts/bench-cputime.sh share: how the applications are
# launched on this host, LAMMPS's input, and the calibration of the host's communication.
# Sourced; the caller sets M (the mpiscope binary).

# apps_launcher NP: the launcher of NP ranks as the application benchmarks run them (bound to
# cores, several per core when NP exceeds them, yielding while they wait).
apps_launcher() {
  echo "mpirun --oversubscribe --mca btl self,vader --mca mpi_yield_when_idle 1 --bind-to core:overload-allowed --map-by core -np $1"
}

# apps_lj_input FILE STEPS: a Lennard-Jones liquid, 16,384 atoms (fcc 16 x 16 x 16), NVE
# (LAMMPS's bench/in.lj at a larger size), STEPS steps; thermo printed with 15 digits so
# that any change of a result shows.
apps_lj_input() {
  cat > "$1" <<EOF_LJ
units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 16 0 16 0 16
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
thermo 100
thermo_modify format float %22.15g
run $2
EOF_LJ
}

# apps_calibrate DIR PLATFORM [CALIBRATE OPTIONS...]: measures point-to-point messages
# between two bound ranks and the wake-up delay of ranks sharing a core (DIR/p2p.json,
# DIR/wake-up.json), then writes the calibrated PLATFORM (the report in DIR/calibrate.txt).
apps_calibrate() {
  local dir=$1 platform=$2
  shift 2
  "$M" bench -np 2 --bind-to core --bytes m8 M4194304 K4 \
    --only send_recv,eager_send,message_rate T100 R3 --json --output "$dir/p2p.json" > /dev/null
  "$M" bench -np 4 --bind-to core --only busy_signal T100 --json \
    --output "$dir/wake-up.json" > /dev/null
  "$M" calibrate "$dir/p2p.json" --wake-up "$dir/wake-up.json" "$@" -o "$platform" \
    > "$dir/calibrate.txt"
}
