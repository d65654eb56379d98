#!/bin/sh
# size.sh: what each dependency adds to a Go binary.
#
#	bench/size.sh BINARY [AFTER]
#
# Sums the sizes `go tool nm -size` gives the binary's symbols (code,
# read-only data, data; not the .bss, which takes no room in the file) by
# the module their package belongs to, as `go version -m` lists the
# binary's modules, the standard library as "std" and the main module by
# its path. Symbols that name no package (the runtime's tables, closures'
# type descriptors) count as "(unattributed)". With AFTER, a second
# binary, it prints both columns and the difference.
#
# The sums are the symbols' bytes alone: a package's share of the
# function table (.gopclntab), the DWARF and the symbol table grows with
# its code too, so a module costs the file about two and a half times
# its figure here unless the binary is stripped (-ldflags=-s -w). Build
# with and without the module to measure the file (docs/size.md).
set -eu

# modsizes BINARY prints "MODULE BYTES" lines.
modsizes() {
	bss=$(readelf -SW "$1" 2>/dev/null | awk '{for (i = 1; i <= NF; i++) if ($i == ".bss") { print $(i+2); exit }}')
	{
		go version -m "$1" | awk '$1 == "mod" || $1 == "dep" { print "MOD", $2 }'
		go tool nm -size "$1"
	} | awk -v bss="${bss:-0}" '
	function hex(s,    i, v) {
		v = 0; s = tolower(s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	BEGIN { bssStart = hex(bss) }
	$1 == "MOD" { mods[$2] = 1; next }
	NF >= 4 && $2 > 0 {
		if (bssStart > 0 && hex($1) >= bssStart) next # .bss, .noptrbss: no room in the file
		name = $4
		sub(/^(type:|go:itab\.|go:string\.|go:func\.|\.eq\.|\.hash\.|\.gcmask\.|\.dict\.)/, "", name)
		sub(/^[*\[\]0-9]+/, "", name)
		# The package path ends at the first "." after the last "/"
		# before any type argument, parameter list or space.
		n = match(name, /[\[( ,]/); if (n > 0) name = substr(name, 1, n - 1)
		slash = 0; for (i = length(name); i > 0; i--) if (substr(name, i, 1) == "/") { slash = i; break }
		dot = index(substr(name, slash + 1), ".")
		pkg = dot > 0 ? substr(name, 1, slash + dot - 1) : ""
		first = pkg; sub(/\/.*/, "", first)
		if (pkg == "" || pkg ~ /^go:|^runtime\.|^_/) mod = "(unattributed)"
		else if (pkg ~ /^vendor\// || first !~ /\./) mod = "std"
		else {
			mod = ""
			for (m in mods) if ((pkg == m || index(pkg, m "/") == 1) && length(m) > length(mod)) mod = m
			if (mod == "") mod = "(unattributed)"
		}
		sum[mod] += $2
	}
	END { for (m in sum) print m, sum[m] }'
}

if [ $# -eq 1 ]; then
	modsizes "$1" | sort -k2,2nr | awk '{ printf "%8.2f MB  %s\n", $2 / 1e6, $1; t += $2 } END { printf "%8.2f MB  total of the symbols; the file: %.2f MB\n", t / 1e6, size / 1e6 }' size="$(wc -c < "$1")"
elif [ $# -eq 2 ]; then
	a=$(mktemp); b=$(mktemp); trap 'rm -f "$a" "$b"' EXIT
	modsizes "$1" > "$a"; modsizes "$2" > "$b"
	printf "%9s %9s %9s  %s\n" before after change "module (MB of symbols)"
	awk -v fa="$(wc -c < "$1")" -v fb="$(wc -c < "$2")" '
	FNR == NR { before[$1] = $2; seen[$1] = 1; next }
	{ after[$1] = $2; seen[$1] = 1 }
	END {
		for (m in seen) { printf "%9.2f %9.2f %+9.2f  %s\n", before[m] / 1e6, after[m] / 1e6, (after[m] - before[m]) / 1e6, m; tb += before[m]; ta += after[m] }
		printf "%9.2f %9.2f %+9.2f  %s\n", tb / 1e6, ta / 1e6, (ta - tb) / 1e6, "total of the symbols"
		printf "%9.2f %9.2f %+9.2f  %s\n", fa / 1e6, fb / 1e6, (fb - fa) / 1e6, "the file"
	}' "$a" "$b" | sort -k1,1nr
else
	echo "usage: bench/size.sh BINARY [AFTER]" >&2
	exit 2
fi
