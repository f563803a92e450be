#!/usr/bin/env bash
# Regenerates data/kjv-genesis-exodus.txt, the small training corpus of the
# README's demo: the books of Genesis and Exodus from the King James Bible
# (1611, public domain).
#
# Source: Debian's `bible-kjv-text` package (the compressed KJV text of the
# Bible Retrieval System by Chip Chapin), read with the `bible` program of the
# `bible-kjv` package. Both are installed here when missing (needs root or
# sudo). The output is committed, so neither the build nor CI needs them.
#
# Layout: one heading line per chapter ("Genesis 1"), one verse per line with
# the verse number removed, a blank line between chapters. Every byte is
# printable ASCII or a newline, so each byte is a token of a byte-level model.
#
# Idempotent: the output is rewritten atomically and is byte-identical on every
# run (the package's text is fixed; its sha256 is in data/README.md).
set -euo pipefail
cd "$(dirname "$0")"

OUT=kjv-genesis-exodus.txt

if ! command -v bible >/dev/null || [[ ! -f /usr/lib/bible.data ]]; then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq bible-kjv bible-kjv-text >/dev/null
fi

tmp=$(mktemp "$OUT.tmp.XXXXXX")
trap 'rm -f "$tmp"' EXIT

# `-l0`: no line wrapping, so a verse stays on one line. The program prints
# "\nGenesis 1\n\n  1 In the beginning ..."; awk drops the verse numbers and
# the blank line after each heading, and separates chapters by one blank line.
bible -l0 gen1:1-exo40:38 | awk '
  /^[A-Z][a-z]+ [0-9]+$/ { if (n++) print ""; print; next }
  /^ +[0-9]+ / { sub(/^ +[0-9]+ /, ""); print; next }
  /^$/ { next }
  { print "make_corpus.sh: unexpected line: " $0 > "/dev/stderr"; exit 1 }
' >"$tmp"

# Sanity checks: ASCII only, the expected number of verses and chapters, and a
# size that suits a demo that trains for a few hundred steps on a CPU.
if LC_ALL=C grep -q '[^[:print:]]' "$tmp"; then
  echo "make_corpus.sh: non-ASCII or control characters in the output" >&2; exit 1
fi
chapters=$(grep -cE '^(Genesis|Exodus) [0-9]+$' "$tmp")
lines=$(grep -c . "$tmp")
verses=$((lines - chapters))
if [[ $chapters -ne 90 || $verses -ne 2746 ]]; then
  echo "make_corpus.sh: expected 90 chapters and 2746 verses, got $chapters and $verses" >&2; exit 1
fi
bytes=$(wc -c <"$tmp")
if ((bytes < 100000 || bytes > 400000)); then
  echo "make_corpus.sh: unexpected size $bytes bytes" >&2; exit 1
fi

chmod 644 "$tmp"
mv -f "$tmp" "$OUT"
trap - EXIT
echo "make_corpus.sh: wrote $OUT ($bytes bytes, $chapters chapters, $verses verses)"
