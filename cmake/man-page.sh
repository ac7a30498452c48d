#!/bin/sh
# Writes the man page of `uscope [COMMAND]` with help2man from its --help, whose text ends with
# the command's examples (one text for --help, man and docs/COMMAND.md):
#   man-page.sh USCOPE_BINARY COMMAND|"" OUTPUT
# help2man runs the command under the name users type (`uscope trace`, not the build path); the
# example command lines are set without filling, so that no spec is broken across lines.
set -eu
uscope=$1 cmd=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
page=uscope${cmd:+-$cmd}
printf '#!/bin/bash\nexec -a uscope %s %s "$@"\n' "$uscope" "$cmd" >"$tmp/$page"
chmod +x "$tmp/$page"
# NAME: the first line of --help (the command's description), lower-cased first letter as man wants.
name=$("$tmp/$page" --help | head -1 | sed 's/^\(.\)/\L\1/')
if [ -n "$cmd" ]; then
  printf '[SEE ALSO]\n.BR uscope (1),\nthe %s reference: docs/%s.md in uscope'"'"'s source.\n' \
    "$cmd" "$cmd" >"$tmp/include"
else
  printf '[SEE ALSO]\n' >"$tmp/include"
  for c in trace count latency hist list profile top http tls stat check dump; do
    printf '.BR uscope-%s (1),\n' "$c" >>"$tmp/include"
  done
  printf 'and README.md in uscope'"'"'s source.\n' >>"$tmp/include"
fi
version=$("$uscope" --version | sed 's/^uscope //')
help2man --locale=C.UTF-8 --no-info --no-discard-stderr --version-string="$version" --name="$name" \
  --include="$tmp/include" --output="$tmp/page.1" "$tmp/$page"
sed '/^\.SH EXAMPLES/,/^\.SH/ s/^uscope .*/.nf\n&\n.fi/' "$tmp/page.1" >"$out"
