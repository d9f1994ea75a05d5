#!/usr/bin/env bash
# Makes a bench/kernel_variants.sh overlay from a branch: the files under src/
# and include/ that the branch changed since it left HEAD's history (merge
# base), as the branch has them, at their paths under .carry/variants/NAME.
# .carry is ignored: name .carry/variants in the device call's carry.
#   bench/branch_overlay.sh BRANCH [NAME]      (NAME defaults to BRANCH)
# Refuses a branch that deletes a file (an overlay can only replace or add)
# and a file that HEAD also changed since the merge base (the overlay would
# undo HEAD's change: rebase the branch first).
set -euo pipefail
branch=${1:?usage: bench/branch_overlay.sh BRANCH [NAME]}
name=${2:-$branch}
cd "$(git rev-parse --show-toplevel)"
base=$(git merge-base HEAD "$branch")
deleted=$(git diff --name-only --diff-filter=D "$base" "$branch" -- src include)
[[ -z $deleted ]] || { echo "branch_overlay: $branch deletes $deleted; an overlay cannot" >&2; exit 1; }
changed=$(git diff --name-only "$base" "$branch" -- src include)
[[ -n $changed ]] || { echo "branch_overlay: $branch changes nothing under src/ or include/ since $base" >&2; exit 1; }
both=$(comm -12 <(echo "$changed" | sort) <(git diff --name-only "$base" HEAD -- src include | sort))
[[ -z $both ]] || { echo "branch_overlay: HEAD also changed $both since $base; rebase $branch first" >&2; exit 1; }
dir=.carry/variants/$name
rm -rf "$dir"
while IFS= read -r f; do
  mkdir -p "$dir/$(dirname "$f")"
  git show "$branch:$f" >"$dir/$f"
done <<<"$changed"
echo "$dir: $(echo "$changed" | wc -l) files from $branch ($(git rev-parse --short "$branch"), base $(git rev-parse --short "$base"))"
