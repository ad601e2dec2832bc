#!/bin/sh
# Build the C/C++ programs of this corpus (and the runstat helper used by
# ground_truth.py) into $1, default /tmp/unannotated-bin.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/unannotated-bin}
mkdir -p "$out"
for src in "$here"/*.c; do
	name=$(basename "$src" .c)
	gcc -O2 -g -pthread -o "$out/$name" "$src"
done
for src in "$here"/*.cpp; do
	name=$(basename "$src" .cpp)
	g++ -O2 -g -pthread -o "$out/$name" "$src"
done
echo "built into $out"
