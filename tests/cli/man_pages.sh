#!/usr/bin/env bash
# Every program the packages install has a man page (docs/man/) that names each option its
# --help prints (and, for safectl, each command and each command's options), and man renders
# every page without a warning (as lintian runs it). A page that misses an option, or an option
# added without its page, fails here.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
command -v man >/dev/null || fail "man not found (apt-get install man-db)"
pages=$SAFE_SOURCE_DIR/docs/man
bin=$SAFE_BUILD_DIR/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The page as text, roff's escaped hyphens plain.
page_text() { sed 's/\\-/-/g; s/\\f[BIRP]//g' "$pages/$1"; }
# The long options a --help prints (usage lines and option lists alike).
long_options() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }

check_options() {  # PAGE HELP_TEXT WHAT
    local page=$1 help=$2 what=$3 option missing=""
    while read -r option; do
        [[ -z $option ]] && continue
        grep -qF -- "$option" <<<"$(page_text "$page")" || missing+=" $option"
    done <<<"$(long_options <<<"$help")"
    [[ -z $missing ]] || fail "$page does not name$missing, which $what prints"
}

for program in safed safe-healthcheck safe-prolog safe-epilog safe-kube-bridge safe-kube-node; do
    page=$program.8
    [[ -f $pages/$page ]] || fail "$program has no man page (docs/man/$page)"
    # safe-epilog's page is safe-prolog's (a .so link).
    [[ $program == safe-epilog ]] && page=safe-prolog.8
    help=$("$bin/$program" --help) || fail "$program --help failed"
    check_options "$page" "$help" "$program --help"
    echo "$program: $page names its $(long_options <<<"$help" | wc -l) options"
done

[[ -f $pages/safectl.1 ]] || fail "safectl has no man page (docs/man/safectl.1)"
# The commands: the lines of safectl's usage under "commands:".
# A command is the leading lower-case words of its line, before the description (two spaces).
commands=$("$bin/safectl" --help | sed -n '/^commands:/,/^$/p' | grep '^  [a-z]' |
    awk '{ sub(/^  /, ""); sub(/  .*/, ""); c = ""; n = split($0, w, " ")
           for (i = 1; i <= n && w[i] ~ /^[a-z][a-z-]*$/; i++) c = c (c == "" ? "" : " ") w[i]; print c }')
[[ $(wc -l <<<"$commands") -ge 8 ]] || fail "found too few commands in safectl --help: $commands"
while read -r command; do
    grep -qE -- "^\.(B|BR|BI) \"?$(sed 's/-/\\\\-/g' <<<"$command")( |\"|$)" "$pages/safectl.1" ||
        fail "safectl.1 has no entry for the command '$command'"
    # shellcheck disable=SC2086 # the command's words
    help=$("$bin/safectl" $command --help) || fail "safectl $command --help failed"
    check_options safectl.1 "$help" "safectl $command --help"
done <<<"$commands"
echo "safectl: safectl.1 names its $(wc -l <<<"$commands") commands and their options"

# man renders each page without a warning, from a tree as installed (the .so link resolves).
mkdir -p "$tmp/man1" "$tmp/man8"
cp "$pages"/*.1 "$tmp/man1/"
cp "$pages"/*.8 "$tmp/man8/"
for page in "$tmp"/man?/*; do
    warnings=$(cd "$tmp" && LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null) ||
        fail "man cannot render ${page##*/}: $warnings"
    [[ -z $warnings ]] || fail "man warns on ${page##*/}: $warnings"
done
echo "man renders $(find "$tmp" -name '*.[18]' | wc -l) pages without a warning"
