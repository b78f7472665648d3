# Sourced by hack/build-testbins.sh and hack/build-node-bins.sh: how to build commands of
# k8s.io/kubernetes from the Go module proxy.
#
# k8s.io/kubernetes requires each of its staging modules (k8s.io/api, k8s.io/client-go, ...) at
# v0.0.0 and resolves them with replace lines pointing into its own tree, which the go command
# ignores outside the main module. A small main module with one replace line per staging module
# (v0.0.0 -> the published v0.X.Y of the same release) builds any of its commands.

# Prints the path of the go.mod of k8s.io/kubernetes@$1 in the module cache (downloads it once).
k8s_gomod_path() {
  local version=$1 dir=$2
  (cd "$dir" && go mod download -json "k8s.io/kubernetes@$version" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
}

# k8s_module DIR VERSION MODULE_NAME PACKAGE...
# Writes DIR/go.mod (k8s.io/kubernetes@VERSION + a replace per staging module) and DIR/tools.go
# (imports PACKAGE... so `go mod tidy` keeps what they need), then runs `go mod tidy` unless the
# same go.mod and tools.go were already tidied.
k8s_module() {
  local dir=$1 version=$2 name=$3
  shift 3
  mkdir -p "$dir"
  local gomod
  gomod=$(k8s_gomod_path "$version" "$dir")
  [ -f "$gomod" ] || { echo "lib-gomod: could not download the go.mod of k8s.io/kubernetes@$version" >&2; return 1; }
  local staging_version="v0.${version#v1.}" staging n go_line
  staging=$( {
    awk '$2 == "v0.0.0" && $1 ~ /^k8s\.io\// { print $1 }' "$gomod"
    awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod"
  } | sort -u)
  n=$(echo "$staging" | grep -c . || true)
  [ "$n" -gt 10 ] || { echo "lib-gomod: found only $n staging modules in $gomod; refusing to guess" >&2; return 1; }
  go_line=$(awk '$1 == "go" { print $2; exit }' "$gomod")
  local want
  want=$({
    echo "module $name"
    echo
    echo "go $go_line"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    for m in $staging; do echo "	$m => $m $staging_version"; done
    echo ")"
  })
  local tools
  tools=$(printf '//go:build tools\n\npackage tools\n\nimport (\n'; for p in "$@"; do printf '\t_ "%s"\n' "$p"; done; printf ')\n')
  # Tidy rewrites go.mod (adds requires); remember what we asked for, so a second run skips it.
  local stamp
  stamp=$(printf '%s\n%s\n' "$want" "$tools" | sha256sum | cut -c1-16)
  if [ -f "$dir/go.sum" ] && [ "$(cat "$dir/.tidied" 2>/dev/null)" = "$stamp" ]; then return 0; fi
  echo "$want" >"$dir/go.mod"
  echo "$tools" >"$dir/tools.go"
  (cd "$dir" && go mod tidy)
  echo "$stamp" >"$dir/.tidied"
}

# The -ldflags that make `--version` print the release, as the Kubernetes build does.
k8s_ldflags() {
  local version=$1
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)"
}
