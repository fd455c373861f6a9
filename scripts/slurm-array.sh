#!/bin/sh
# slurm-array.sh TFCONV OUTDIR [N]
#
# Runs docs/parallel.md's Slurm job array for real on a tiny synthetic
# checkpoint: sbatch --array=1-N (and again --array=4-(3+N), a MIN other
# than 1) of `tfconv convert … --split-max-size 12M --part auto/N --resume`,
# each task writing its part of the set into one folder; then checks that
# the set is byte-identical to a single-process run's and that
# `tfconv check` finds it whole. Needs a running Slurm (sbatch, srun) whose
# nodes see OUTDIR; on this project's machine, Debian's slurm-wlm in the
# trixie chroot (docs/parallel.md, "A Slurm array, run"):
#
#	chroot /work/ref/trixie sh scripts/slurm-array.sh "$PWD/tfconv" /work/…/slurm-run 3
set -eu
TFCONV=$1 OUT=$2 N=${3:-3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
"$TFCONV" synth --like gpt2-124m --layers 2 --to safetensors --force "$OUT/src" >/dev/null
mkdir -p "$OUT/single"
"$TFCONV" convert "$OUT/src" "$OUT/single/m.gguf" --outtype f16 --split-max-size 12M --force >/dev/null
single=$(cd "$OUT/single" && sha256sum m-*.gguf)
echo "single process: $(echo "$single" | wc -l) shards"
rc=0
for range in "1-$N" "4-$((3 + N))"; do
	dir="$OUT/array-$range"
	mkdir -p "$dir"
	cat >"$dir/convert.sbatch" <<EOS
#!/bin/sh
#SBATCH --job-name=tfconv-part
#SBATCH --array=$range
#SBATCH --cpus-per-task=1
#SBATCH --mem=500M
#SBATCH --output=$dir/part-%A_%a.log
set -eu
echo "task \$SLURM_ARRAY_TASK_ID of \$SLURM_ARRAY_TASK_MIN-\$SLURM_ARRAY_TASK_MAX on \$(hostname)"
srun "$TFCONV" convert "$OUT/src" "$dir/m.gguf" --outtype f16 --split-max-size 12M --part auto/$N --resume --json
EOS
	job=$(sbatch --parsable --wait "$dir/convert.sbatch") || { echo "array $range: sbatch failed" >&2; rc=1; continue; }
	got=$(cd "$dir" && sha256sum m-*.gguf)
	if [ "$got" = "$single" ]; then same=yes; else same=NO; rc=1; fi
	if "$TFCONV" check "$(ls "$dir"/m-00001-of-*.gguf)" >"$dir/check.out" 2>&1; then check=whole; else check="NOT whole (exit $?)"; rc=1; fi
	left=$(ls "$dir" | grep -c tfconv-resume || true)
	echo "array $range (job $job): $(ls "$dir"/part-*.log | wc -l) tasks; shards byte-identical to the single run: $same; tfconv check: $check; resume records left: $left"
	for l in "$dir"/part-*.log; do
		printf '  %s: %s\n' "$(basename "$l")" "$(head -1 "$l")"
	done
done
exit $rc
