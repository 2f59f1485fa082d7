#!/usr/bin/env bash
# docs/cli.md shows the --help of every mqctl command verbatim, in fenced
# blocks that start with the line "$ mqctl COMMAND --help".  This test runs
# each of them and diffs; it also fails when a command listed by
# "mqctl --help" has no block.  It needs no database.
#
# After changing a help text, regenerate the blocks with
#   MQ_DOCS_UPDATE=1 bash test/cli/docs.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

doc=docs/cli.md

# The "$ mqctl ... --help" lines of the document, one per block.
doc_commands() { sed -n 's/^\$ \(mqctl.* --help\)$/\1/p' "$doc"; }

# The block of the command line $1, without the command line itself.
doc_block() {
	awk -v want="\$ $1" '
		$0 == want { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' "$doc"
}

if [[ -n "${MQ_DOCS_UPDATE:-}" ]]; then
	new="$(tmpdir)/cli.md"
	while IFS= read -r line; do
		printf '%s\n' "$line"
		if [[ "$line" =~ ^\$\ (mqctl.*\ --help)$ ]]; then
			# shellcheck disable=SC2086 # the words of the command
			"$MQCTL" ${BASH_REMATCH[1]#mqctl }
			skip=1
		fi
		if [[ -n "${skip:-}" ]]; then
			# drop the old text up to the closing fence, which is kept
			while IFS= read -r line && [[ ! "$line" =~ ^\`\`\` ]]; do :; done
			printf '%s\n' "$line"
			skip=""
		fi
	done <"$doc" >"$new"
	cp "$new" "$doc"
	echo "# regenerated the --help blocks of $doc"
fi

mapfile -t listed < <(doc_commands)
check_match "${#listed[@]}" '^[1-9][0-9]*$' "$doc has --help blocks (${#listed[@]})"

# every command of mqctl --help, and mqctl itself, has a block
mapfile -t commands < <("$MQCTL" --help | sed -n '/^Commands:/,/^$/p' |
	sed -n 's/^  \([a-z][a-z -]*[a-z]\)  .*/\1/p')
for c in "" "${commands[@]}"; do
	want="mqctl${c:+ $c} --help"
	found=""
	for l in "${listed[@]}"; do
		[[ "$l" == "$want" ]] && found=1
	done
	if [[ -n "$found" ]]; then
		pass "$doc has a block for \"$want\""
	else
		fail "$doc has no block for \"$want\"" \
			"add a fenced block whose first line is \"\$ $want\", then run MQ_DOCS_UPDATE=1 bash test/cli/docs.sh"
	fi
done

# every block matches what the binary prints
for l in "${listed[@]}"; do
	# shellcheck disable=SC2086
	got="$("$MQCTL" ${l#mqctl })"
	if [[ "$(doc_block "$l")" == "$got" ]]; then
		pass "\"$l\" matches $doc"
	else
		fail "\"$l\" differs from $doc (regenerate: MQ_DOCS_UPDATE=1 bash test/cli/docs.sh)" \
			"$(diff <(doc_block "$l") <(printf '%s\n' "$got") || true)"
	fi
done

finish
