#!/usr/bin/env bash
# The commit every result's provenance names (cmake/DpstudyBuildInfo.cmake) is
# found in a `git worktree`, where .git is a file (configure failed there reading
# .git/HEAD), and a commit or a branch move there reconfigures: HEAD lies in the
# worktree's git folder, the branch in the repository's common one.
# usage: build_info_in_worktree.sh SOURCE_DIR CMAKE GENERATOR
set -eu
src=$1 cmake=$2 generator=$3
command -v git >/dev/null || { echo "skipped: no git"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
mkdir -p "$repo/cmake"
cp "$src/cmake/DpstudyBuildInfo.cmake" "$src/cmake/config.hpp.in" "$src/cmake/build_info.cpp.in" "$repo/cmake/"
cat > "$repo/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(worktree_check VERSION 1.2.3 LANGUAGES NONE)
include(cmake/DpstudyBuildInfo.cmake)
dpstudy_write_build_info()
CMAKE
git() { command git -c user.name=test -c user.email=test@localhost -c init.defaultBranch=main "$@"; }
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" commit -qm one
git -C "$repo" worktree add -q -b side "$tmp/wt"
commit=$(git -C "$tmp/wt" rev-parse HEAD)
"$cmake" -S "$tmp/wt" -B "$tmp/build" -G "$generator" > "$tmp/configure.log" 2>&1 || {
  cat "$tmp/configure.log"; exit 1; }
grep -q "git_commit = \"$commit\"" "$tmp/build/generated/build_info.cpp" || {
  echo "build_info.cpp does not name commit $commit:"; grep git_commit "$tmp/build/generated/build_info.cpp"; exit 1; }
deps=$(cat "$tmp/build/CMakeFiles/Makefile.cmake" "$tmp/build/build.ninja" 2>/dev/null || true)
for dep in "$repo/.git/worktrees/wt/HEAD" "$repo/.git/refs/heads/side"; do
  grep -qF "$dep" <<< "$deps" || { echo "not a configure dependency: $dep"; exit 1; }
done
echo "worktree: commit $commit found; HEAD and refs/heads/side are configure dependencies"
