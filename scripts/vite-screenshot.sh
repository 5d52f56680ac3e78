#!/usr/bin/env bash
# The OTF2 export opened in a real viewer: traces the bundled example (examples/halo.c, 4
# ranks), exports it to OTF2, opens it in ViTE (Debian's `vite`) on a virtual screen (Xvfb)
# showing a few iterations of its loop, and writes the screenshot to docs/images/vite-halo.png.
# Needs vite, xvfb, xdotool and imagemagick (apt-get install -y vite xvfb xdotool imagemagick).
# Usage: scripts/vite-screenshot.sh [OUT_DIR]   (default target/vite)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/vite}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cargo build --release -p mpiscope -p mpiscope-preload-openmpi
mkdir -p "$out" docs/images
bin=target/release/mpiscope
if [ ! -d "$out/example" ]; then
  mpicc -g -O2 -o "$out/halo" examples/halo.c -lm
  "$bin" trace -o "$out/example" -- mpirun -np 4 "$out/halo"
fi
"$bin" export "$out/example" --format otf2 --force -o "$out/otf2"
# The loop starts after the first MPI_Bcast of rank 0; show 3.5 ms from there.
start=$("$bin" dump "$out/example" --rank 0 | awk '$4 == "MPI_Bcast" { print $2; exit }')
end=$(echo "$start + 0.0035" | bc)
display=:$((90 + RANDOM % 100))
Xvfb "$display" -screen 0 1400x800x24 > /dev/null 2>&1 &
xvfb=$!
trap 'kill $vite $xvfb 2> /dev/null || true' EXIT
sleep 2
DISPLAY=$display vite -t "$start:$end" -f "$out/otf2/traces.otf2" > "$out/vite.log" 2>&1 &
vite=$!
sleep 15
for w in $(DISPLAY=$display xdotool search --name ViTE); do
  DISPLAY=$display xdotool windowsize "$w" 1400 800 2> /dev/null || true
done
sleep 3
DISPLAY=$display xwd -root -silent | convert xwd:- -crop 1400x800+0+0 docs/images/vite-halo.png
echo "wrote docs/images/vite-halo.png (ViTE showing $start s to $end s of $out/otf2/traces.otf2)"
