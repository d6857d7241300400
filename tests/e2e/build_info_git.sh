#!/usr/bin/env bash
# The commit every result's provenance names, and whether the checkout had
# uncommitted changes (cmake/DpstudyBuildInfo.cmake, DpstudyGitState.cmake):
# found in a `git worktree`, where .git is a file (configure failed there reading
# .git/HEAD); looked up again at every build, so that a commit, an edit or a new
# file shows without configuring again; a build folder inside the checkout that
# .gitignore does not name, and ignored files, are not changes; an unchanged
# state rewrites nothing; the changes' digest tells two sets of changes apart
# and is the same for the same changes.
# usage: build_info_git.sh SOURCE_DIR CMAKE GENERATOR
set -eu
src=$1 cmake=$2 generator=$3
command -v git >/dev/null || { echo "skipped: no git"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
mkdir -p "$repo/cmake"
cp "$src/cmake/DpstudyBuildInfo.cmake" "$src/cmake/DpstudyGitState.cmake" "$src/cmake/config.hpp.in" \
  "$src/cmake/build_info.cpp.in" "$repo/cmake/"
cat > "$repo/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(git_state_check VERSION 1.2.3 LANGUAGES NONE)
include(cmake/DpstudyBuildInfo.cmake)
dpstudy_write_build_info()
CMAKE
echo "/ignored/" > "$repo/.gitignore"
echo one > "$repo/notes.txt"
git() { command git -c user.name=test -c user.email=test@localhost -c init.defaultBranch=main "$@"; }
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" commit -qm one
git -C "$repo" worktree add -q -b side "$tmp/wt"
wt=$tmp/wt

# expect BUILD_DIR COMMIT CHANGES WHAT: build, then check build_info.cpp says so.
# CHANGES "uncommitted" expects "uncommitted <12 hex digits>", the digits then in $digest.
expect() {
  "$cmake" --build "$1" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
  local out=$1/generated/build_info.cpp pattern=$3
  [ "$3" = uncommitted ] && pattern="uncommitted [0-9a-f]{12}"
  grep -q "git_commit = \"$2\"" "$out" && grep -Eq "git_changes = \"$pattern\"" "$out" || {
    echo "after $4: expected commit $2, changes $pattern:"; grep git_ "$out"; exit 1; }
  digest=$(sed -n 's/.*git_changes = "uncommitted \([0-9a-f]*\)".*/\1/p' "$out")
  echo "after $4: commit ${2:0:12}, changes $3${digest:+ $digest}"
}
# same|other DIGEST WHAT: whether $digest is (or is not) DIGEST.
digest_is() {
  if [ "$1" = same ] && [ "$digest" != "$2" ]; then echo "after $3: expected the digest $2, got $digest"; exit 1; fi
  if [ "$1" = other ] && [ "$digest" = "$2" ]; then echo "after $3: expected a digest other than $2"; exit 1; fi
}
configure() {
  "$cmake" -S "$wt" -B "$1" -G "$generator" > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
}

configure "$tmp/build"
first=$(git -C "$wt" rev-parse HEAD)
expect "$tmp/build" "$first" none "configure in a worktree"
stamp=$(stat -c %Y.%y "$tmp/build/generated/build_info.cpp")
sleep 1.1
expect "$tmp/build" "$first" none "a build with nothing changed"
[ "$(stat -c %Y.%y "$tmp/build/generated/build_info.cpp")" = "$stamp" ] || {
  echo "an unchanged state rewrote build_info.cpp"; exit 1; }
mkdir -p "$wt/ignored" && echo x > "$wt/ignored/file"
expect "$tmp/build" "$first" none "an ignored file"
echo two >> "$wt/notes.txt"
expect "$tmp/build" "$first" uncommitted "an edit"
edited=$digest
cp "$wt/notes.txt" "$tmp/notes.edited"
echo three >> "$wt/notes.txt"
expect "$tmp/build" "$first" uncommitted "another edit"
digest_is other "$edited" "another edit"
cp "$tmp/notes.edited" "$wt/notes.txt"
expect "$tmp/build" "$first" uncommitted "the first edit again"
digest_is same "$edited" "the first edit again"
git -C "$wt" commit -qam two
second=$(git -C "$wt" rev-parse HEAD)
expect "$tmp/build" "$second" none "a commit"
echo new > "$wt/new-file"
expect "$tmp/build" "$second" uncommitted "a new file"
added=$digest
echo newer > "$wt/new-file"
expect "$tmp/build" "$second" uncommitted "the new file edited"
digest_is other "$added" "the new file edited"
rm "$wt/new-file"
expect "$tmp/build" "$second" none "its removal"
configure "$wt/inside"
expect "$wt/inside" "$second" none "a build folder inside the checkout"
mkdir "$tmp/plain" && cp -r "$repo/cmake" "$repo/CMakeLists.txt" "$tmp/plain/"
"$cmake" -S "$tmp/plain" -B "$tmp/plain-build" -G "$generator" > "$tmp/configure.log" 2>&1 || {
  cat "$tmp/configure.log"; exit 1; }
expect "$tmp/plain-build" unknown unknown "a source folder outside git"
