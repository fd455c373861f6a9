#!/usr/bin/env bash
# release.sh: tfconv's release, into dist/: a static binary for each of linux, darwin and windows on amd64 and
# arm64 (CGO_ENABLED=0, -trimpath, no build id, the version and VCS revision stamped), SHA256SUMS over them,
# and a pip wheel per platform carrying that platform's binary and the Python API (python/tfconv).
#
#   scripts/release.sh [VERSION]        (default: git describe --tags, "v" dropped; 0.0.0+g<rev> untagged)
#   PLATFORMS="linux/amd64" scripts/release.sh      builds a subset (CI builds the one it tests)
#
# The same commit gives the same bytes: binaries by -trimpath and -buildid=, wheels by SOURCE_DATE_EPOCH (the
# commit's time). Wheels are packed by Debian's python3-wheel (`python3 -m wheel pack`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=${1:-}
if [ -z "$version" ]; then
  if d=$(git describe --tags --exact-match 2>/dev/null); then
    version=${d#v}
  else
    version="0.0.0+g$(git rev-parse --short=12 HEAD)"
  fi
fi
case "$version" in
  [0-9]*) ;;
  *) echo "release.sh: version $version: want a PEP 440 version such as 1.2.0 (a leading v is dropped)" >&2; exit 2 ;;
esac
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
python=${PYTHON:-/usr/bin/python3}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
# go stamps the revision itself in a clone; from a worktree it cannot, so it is also given by -X (go's wins).
rev=$(git rev-parse HEAD) modified=false
[ -z "$(git status --porcelain --untracked-files=no)" ] || modified=true
revtime=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd)
dist=$root/dist
mkdir -p "$dist"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# wheel_tags OS ARCH: the wheel platform tags a static binary of OS/ARCH runs under.
wheel_tags() {
  case "$1/$2" in
    linux/amd64) echo "manylinux_2_17_x86_64 manylinux2014_x86_64 musllinux_1_1_x86_64" ;;
    linux/arm64) echo "manylinux_2_17_aarch64 manylinux2014_aarch64 musllinux_1_1_aarch64" ;;
    darwin/amd64) echo "macosx_10_12_x86_64" ;;
    darwin/arm64) echo "macosx_11_0_arm64" ;;
    windows/amd64) echo "win_amd64" ;;
    windows/arm64) echo "win_arm64" ;;
    *) echo "release.sh: no wheel tag for $1/$2" >&2; return 1 ;;
  esac
}

bins=()
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  ext=""
  [ "$os" = windows ] && ext=.exe
  bin="tfconv-$version-$os-$arch$ext"
  echo "building $bin" >&2
  # -buildvcs=true overrides a GOFLAGS=-buildvcs=false: the revision is part of --version.
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=true \
    -ldflags "-s -w -buildid= -X main.version=$version -X main.revision=$rev -X main.revisionTime=$revtime -X main.revisionModified=$modified" -o "$dist/$bin" ./cmd/tfconv
  bins+=("$bin")

  # The wheel: the package, and the binary as a script pip puts on PATH (in the venv's bin/ or Scripts\).
  w=$work/$os-$arch
  data=$w/tfconv-$version.data/scripts
  info=$w/tfconv-$version.dist-info
  mkdir -p "$w/tfconv" "$data" "$info"
  sed "s/^__version__ = .*/__version__ = \"$version\"/" python/tfconv/__init__.py > "$w/tfconv/__init__.py"
  install -m 0755 "$dist/$bin" "$data/tfconv$ext"
  {
    echo "Metadata-Version: 2.1"
    echo "Name: tfconv"
    echo "Version: $version"
    echo "Summary: Convert, quantize, run and verify transformer checkpoints (GGUF, safetensors, MLX): the tfconv binary and a Python API"
    echo "License: see the project's LICENSE"
    echo "Requires-Python: >=3.8"
    echo "Provides-Extra: numpy"
    echo "Requires-Dist: numpy; extra == \"numpy\""
    echo "Description-Content-Type: text/markdown"
    echo
    cat python/README.md
  } > "$info/METADATA"
  {
    echo "Wheel-Version: 1.0"
    echo "Generator: tfconv scripts/release.sh"
    echo "Root-Is-Purelib: false"
    for t in $(wheel_tags "$os" "$arch"); do echo "Tag: py3-none-$t"; done
  } > "$info/WHEEL"
  "$python" -m wheel pack "$w" -d "$dist" >&2
done

(cd "$dist" && sha256sum "${bins[@]}" $(ls tfconv-"$version"-*.whl 2>/dev/null | sed 's#.*/##') > SHA256SUMS)
echo "dist/: ${#bins[@]} binaries, $(ls "$dist"/tfconv-"$version"-*.whl | wc -l) wheels, SHA256SUMS" >&2
