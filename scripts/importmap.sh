#!/usr/bin/env bash
# Rewrites the import map in docs/architecture.md (the block after "Imports as they are today")
# from the code, as TestArchitectureImportMap prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 -run '^TestArchitectureImportMap$' -v . 2>&1 |
	sed -n '/the map as the code has it:/,/^--- FAIL/p' | sed '1d;$d' | sed 's/^        //' >/tmp/importmap.$$ || true
if [ ! -s /tmp/importmap.$$ ]; then
	echo "import map already true"
	rm -f /tmp/importmap.$$
	exit 0
fi
python3 - /tmp/importmap.$$ <<'PY'
import sys
new = open(sys.argv[1]).read()
p = 'docs/architecture.md'
s = open(p).read()
i = s.index('Imports as they are today')
a = s.index('```', i)
a = s.index('\n', a) + 1
b = s.index('```', a)
open(p, 'w').write(s[:a] + new + s[b:])
PY
rm -f /tmp/importmap.$$
echo "import map rewritten"
