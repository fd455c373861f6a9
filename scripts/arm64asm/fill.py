#!/usr/bin/env python3
# Rewrites every "WORD $0x...  // INSN" line of the given Go asm files with the
# encoding GNU as gives for INSN (checks hand encodings; idempotent).
import re, subprocess, sys, tempfile, os
pat = re.compile(r'^(\s*)WORD\s+\$(?:0x)?[0-9a-fA-F]*(\s*)//\s*(.+?)\s*$')
for fn in sys.argv[1:]:
    lines = open(fn).read().split('\n')
    idx, insns = [], []
    for i, l in enumerate(lines):
        m = pat.match(l)
        if m:
            idx.append(i); insns.append(m.group(3))
    if not insns: continue
    d = tempfile.mkdtemp()
    open(d+'/a.s','w').write('\n'.join(i.lower() for i in insns)+'\n')
    subprocess.run(['aarch64-linux-gnu-as','-march=armv8.2-a+dotprod+fp16','-o',d+'/a.o',d+'/a.s'],check=True)
    out = subprocess.run(['aarch64-linux-gnu-objdump','-d',d+'/a.o'],capture_output=True,text=True,check=True).stdout
    codes = [m.group(1) for m in re.finditer(r'^\s*[0-9a-f]+:\s+([0-9a-f]{8})\s', out, re.M)]
    assert len(codes) == len(insns), (len(codes), len(insns))
    for i, c, ins in zip(idx, codes, insns):
        m = pat.match(lines[i])
        lines[i] = f"{m.group(1)}WORD $0x{c}\t// {ins.upper()}"
    open(fn,'w').write('\n'.join(lines))
    print(fn, len(insns), 'encoded')
