#!/bin/sh
# usage: enc.sh "fmul v0.4s, v1.4s, v2.4s" ...  -> prints WORD lines
f=$(mktemp -d)
for i in "$@"; do echo "$i"; done > $f/a.s
aarch64-linux-gnu-as -march=armv8.2-a+dotprod+fp16 -o $f/a.o $f/a.s || exit 1
aarch64-linux-gnu-objdump -d $f/a.o | awk -F'\t' '/^ *[0-9a-f]+:/{print "WORD $0x" $2 "\t// " toupper($3) " " toupper($4)}' | sed 's/ *\t/\t/'
rm -rf $f
