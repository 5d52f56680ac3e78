# hpl_dat NS NB PS QS [BCAST [DEPTH [SWAP]]]: an HPL.dat on stdout with HPL's default
# algorithm choices (WR11C2R4: depth 1, 1ringM, Crout, NDIV 2, right-looking, NBMIN 4,
# SWAP mix 64) unless BCAST (0-5), DEPTH (0, 1, ...) or SWAP (0-2) say otherwise.
# NS, PS and QS are space-separated lists (PS and QS of the same length); NB one value.
# Sourced by the HPL benchmark scripts.
hpl_dat() {
  local ns=($1) ps=($3) qs=($4) bcast=${5:-1} depth=${6:-1} swap=${7:-2}
  cat <<EOF_DAT
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
${#ns[@]}            # of problems sizes (N)
${ns[*]}     Ns
1            # of NBs
$2          NBs
0            PMAP process mapping (0=Row-,1=Column-major)
${#ps[@]}            # of process grids (P x Q)
${ps[*]}     Ps
${qs[*]}     Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
$bcast            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
$depth            DEPTHs (>=0)
$swap            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
EOF_DAT
}

# fat_tree_toml TOPOLOGY: an mpiscope platform on stdout, a fat tree (SimGrid notation, e.g.
# "2;16,16;1,8;1,1") of 10 Gf hosts and 10 Gbps / 1 us cables, as the HPL benchmarks use.
fat_tree_toml() {
  printf '[fat_tree]\nid = "ft"\nprefix = "node-"\nspeed = "10Gf"\nbandwidth = "10Gbps"\nlatency = "1us"\ntopology = "%s"\n' "$1"
}
