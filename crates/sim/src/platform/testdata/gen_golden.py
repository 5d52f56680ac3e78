#!/usr/bin/env python3
# Writes <platform>.routes next to each given SimGrid platform: SimGrid's routes for up to 256
# host pairs (all pairs of small platforms), from the route_oracle program.
import subprocess, sys, random, os
oracle = sys.argv[1]
for xml in sys.argv[2:]:
    out = subprocess.run([oracle, xml, 'count'], capture_output=True, text=True).stdout
    names = [l.split()[1] for l in out.splitlines() if l.startswith('host ')]
    if len(names) ** 2 <= 256:
        pairs = [(a, b) for a in names for b in names]
    else:
        rnd = random.Random(42)
        pairs = [(rnd.choice(names), rnd.choice(names)) for _ in range(150)]
        pairs += [(n, n) for n in rnd.sample(names, 10)]
    pf = xml + '.pairs'
    with open(pf, 'w') as f:
        for a, b in pairs: f.write(f'{a} {b}\n')
    out = subprocess.run([oracle, xml, pf], capture_output=True, text=True).stdout
    os.remove(pf)
    lines = []
    for l in out.splitlines():
        v = l.split()
        if not v or v[0] != 'route': continue
        if len(v) == 4 and v[3] == '0':
            lines.append(f'{v[1]} {v[2]} EMPTY')
        else:
            lines.append(' '.join(v[1:]))
    assert len(lines) == len(pairs), (xml, len(lines), len(pairs))
    base = os.path.splitext(xml)[0]
    with open(base + '.routes', 'w') as f:
        f.write('# SimGrid 3.32 routes: src dst latency links... (EMPTY: no link)\n')
        f.write('\n'.join(lines) + '\n')
    print(xml, len(lines))
