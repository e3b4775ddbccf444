#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering check (docs/testing.md, "Layering"): within each component,
# the files' calls must flow one way. From the objects' symbol tables (nm):
# file A calls file B when A uses a global symbol B defines; a cycle in that
# graph (A calls B and B calls A, directly or through others) fails, naming
# it. Calls through function pointers (callbacks, hooks) are not edges: they
# are the deliberate way back up. Prints each component's files from the
# bottom layer up. POSIX sh and awk.
# Usage: tests/layering/check.sh OBJDIR COMPONENT...   (OBJDIR: build/obj; run from the
# directory that holds the components' sources, the repo root)
set -eu
obj=${1:?usage: tests/layering/check.sh OBJDIR COMPONENT...}
shift
status=0
for comp in "$@"; do
	dir=$obj/$comp
	ls "$dir"/*.o >/dev/null 2>&1 || { echo "layering: FAIL: no objects in $dir (build first)"; status=1; continue; }
	for o in "$dir"/*.o; do
		f=$(basename "$o" .o)
		# main.o is the program, not part of the library: it may call anything and nothing calls it.
		[ "$f" = main ] && continue
		# An object whose source is gone (a stale build) is not part of the component.
		[ -f "$comp/$f.c" ] || continue
		nm --defined-only -g "$o" | awk -v f="$f" 'NF == 3 { print "D", f, $3 }'
		nm -u "$o" | awk -v f="$f" '{ print "U", f, $NF }'
	done | awk -v comp="$comp" '
		$1 == "D" { def[$3] = $2; files[$2] = 1; next }
		$1 == "U" { use[++nu] = $2 " " $3; files[$2] = 1 }
		END {
			for (i = 1; i <= nu; i++) {
				split(use[i], u, " ")
				if ((u[2] in def) && def[u[2]] != u[1] && !((u[1], def[u[2]]) in edge)) {
					edge[u[1], def[u[2]]] = 1
					out[u[1]] = out[u[1]] " " def[u[2]]
				}
			}
			# Depth-first search with colours: 1 on the stack, 2 done. A back edge is a cycle.
			n = 0
			for (f in files) name[++n] = f
			# sorted, so the output is the same every time
			for (i = 2; i <= n; i++) for (j = i; j > 1 && name[j] < name[j - 1]; j--) { t = name[j]; name[j] = name[j - 1]; name[j - 1] = t }
			bad = 0; nord = 0
			for (i = 1; i <= n; i++) if (!colour[name[i]]) visit(name[i], name[i])
			if (bad) exit 1
			line = ""
			for (i = 1; i <= nord; i++) line = line " " order[i]
			printf "layering: %s/: %d files, %d calls between files, no cycle; bottom up:%s\n", comp, n, nedges(), line
		}
		function nedges(   k, c) { c = 0; for (k in edge) c++; return c }
		function visit(f, path,   k, m, parts, g) {
			colour[f] = 1
			m = split(out[f], parts, " ")
			for (k = 1; k <= m; k++) {
				g = parts[k]
				if (colour[g] == 1) {
					printf "layering: FAIL: %s/: a call cycle: %s -> %s\n", comp, path, g
					bad = 1
				} else if (!colour[g]) visit(g, path " -> " g)
			}
			colour[f] = 2
			order[++nord] = f
		}' || status=1
done
exit $status
