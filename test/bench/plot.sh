#!/usr/bin/env bash
# The plots of docs/benchmarks.md, drawn with gnuplot (gnuplot-nox) from
# the benchmark scripts' outputs, kept in docs/img/data/:
#
#   peers.dat        test/bench/peers.sh --data      -> peers-throughput.svg,
#                                                       peers-latency.svg
#   peers-replicated.dat  test/bench/peers.sh --replicated --data
#                                                    -> peers-replicated-throughput.svg,
#                                                       peers-replicated-latency.svg
#   scale.md         test/bench/scale.sh --out       -> scale-partitions.svg,
#                                                       scale-producers.svg,
#                                                       scale-size.svg
#   scale-replicated.md  test/bench/scale.sh --replicated --out
#                                                    -> scale-replicated-partitions.svg,
#                                                       scale-replicated-producers.svg,
#                                                       scale-replicated-size.svg
#   scale_log.dat    test/bench/scale_log.sh --data  -> scale-log.svg
#   many_topics.dat  test/bench/many_topics.sh --data -> many-topics.svg
#
# SVGs go to docs/img/ (or OUTDIR).  A missing input skips its plots.
#
# Usage: test/bench/plot.sh [DATADIR [OUTDIR]]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
DATA="${1:-docs/img/data}"
OUTDIR="${2:-docs/img}"
bash scripts/install-deps.sh bench >&2	# gnuplot
mkdir -p "$OUTDIR"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

TERM_SVG='set terminal svg size 760,420 font "sans,12" background rgb "white"'
STYLE='set grid ytics lc rgb "#dddddd"; set border 3; set xtics nomirror; set ytics nomirror; set key top left'

# plot_peers NAME WHAT: NAME.dat -> NAME-throughput.svg, NAME-latency.svg
plot_peers() {
	local name="$1" what="$2"
	[[ -f "$DATA/$name.dat" ]] || return 0
	gnuplot <<-EOF
		$TERM_SVG
		$STYLE
		set output "$OUTDIR/$name-throughput.svg"
		set title "Records/s, 100-byte records, $what (higher is better; log scale)"
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.85 border -1
		set logscale y
		set yrange [10:*]
		set key outside right top vertical
		set xtics rotate by -20
		plot "$DATA/$name.dat" using 2:xtic(1) title "single, 1 client", \
		     "" using 3 title "single, 4 clients", \
		     "" using 4 title "batches of 1,000", \
		     "" using 5 title "consume + ack"
		set output "$OUTDIR/$name-latency.svg"
		set title "End-to-end latency at a fixed rate, ms, $what (lower is better; log scale)"
		set yrange [0.01:*]
		plot "$DATA/$name.dat" using 6:xtic(1) title "p50", "" using 7 title "p99"
	EOF
}

# plot_scale NAME A B RATIO: scale.sh's markdown table NAME.md -> three
# data files (x, A, B, ratio A/B, the right axis named RATIO) ->
# NAME-partitions.svg, NAME-producers.svg, NAME-size.svg
plot_scale() {
	local name="$1" a="$2" b="$3" r="$4"
	[[ -f "$DATA/$name.md" ]] || return 0
	awk -F '|' -v dir="$TMP" '
		$2 ~ /^ P:/ { split($3, a, " "); print a[1], $4, $5, $6 > dir "/P.dat" }
		$2 ~ /^ C:/ { split($3, a, " "); print a[1], $4, $5, $6 > dir "/C.dat" }
		$2 ~ /^ S:/ { split($3, a, " "); print a[1], $4, $5, $6 > dir "/S.dat" }' "$DATA/$name.md"
	local c x title out
	for c in P C S; do
		case "$c" in
		P) x="partitions (4 clients, random partition)"; title="Produce against partitions"; out=$name-partitions ;;
		C) x="producers (each its own partition of 16)"; title="Produce against producers"; out=$name-producers ;;
		S) x="record size, bytes (1 client)"; title="Produce against record size"; out=$name-size ;;
		esac
		gnuplot <<-EOF
			$TERM_SVG
			$STYLE
			set output "$OUTDIR/$out.svg"
			set title "$title: records/s (left), $a / $b (right)"
			set xlabel "$x"
			set logscale x 2
			$([[ $c == S ]] && echo 'set logscale x 10; set logscale y' || echo 'set yrange [0:*]')
			set key bottom left
			set ylabel "records/s"
			set y2label "$r"
			set y2range [0:1.5]
			set y2tics 0.25
			set ytics nomirror
			plot "$TMP/$c.dat" using 1:2 with linespoints lw 2 pt 7 title "$a", \
			     "" using 1:3 with linespoints lw 2 pt 5 title "$b", \
			     "" using 1:4 axes x1y2 with linespoints dt 2 pt 6 title "ratio (right axis)"
		EOF
	done
}

plot_scale_log() {
	[[ -f "$DATA/scale_log.dat" ]] || return 0
	gnuplot <<-EOF
		$TERM_SVG
		$STYLE
		set output "$OUTDIR/scale-log.svg"
		set title "Fetch at the tail against log size (one partition; each point beside a 10k-record topic)"
		set xlabel "records in the partition"
		set ylabel "µs per fetch"
		set y2label "big / 10k-record topic, same run"
		set logscale x 10
		set format x "10^{%L}"
		set yrange [0:*]
		set y2range [0:3]
		set y2tics 0.5
		set key top left
		plot "$DATA/scale_log.dat" using 1:2 with linespoints lw 2 pt 7 title "last 1,000 records", \
		     "" using 1:5 with linespoints lw 2 pt 5 title "at the end (no records)", \
		     "" using 1:4 axes x1y2 with linespoints dt 2 pt 6 title "ratio, last 1,000 (right)", \
		     "" using 1:7 axes x1y2 with linespoints dt 2 pt 4 title "ratio, at the end (right)"
	EOF
}

plot_many_topics() {
	[[ -f "$DATA/many_topics.dat" ]] || return 0
	gnuplot <<-EOF
		set terminal svg size 760,560 font "sans,12" background rgb "white"
		$STYLE
		set output "$OUTDIR/many-topics.svg"
		set multiplot layout 2,1 title "Many topics (4 partitions each)"
		set logscale xy
		set xlabel "topics"
		set ylabel "ms"
		plot "$DATA/many_topics.dat" using 1:(\$4 / 1000) with linespoints lw 2 pt 7 title "send, 2 clients", \
		     "" using 1:(\$5 / 1000) with linespoints lw 2 pt 5 title "fetch, 2 clients", \
		     "" using 1:2 with linespoints lw 2 pt 9 title "create, per topic", \
		     "" using 1:3 with linespoints lw 2 dt 2 pt 8 title "4 plain tables, per topic", \
		     "" using 1:9 with linespoints lw 2 pt 11 title "maintenance pass"
		set ylabel "MB"
		plot "$DATA/many_topics.dat" using 1:(\$6 / 1048576) with linespoints lw 2 pt 7 title "backend that touched every partition", \
		     "" using 1:(\$11 / 1048576) with linespoints lw 2 pt 5 title "system catalogs on disk", \
		     "" using 1:(\$8 / 1048576) with linespoints lw 2 pt 9 title "mq topic cache"
		unset multiplot
	EOF
}

plot_peers peers "one machine"
plot_peers peers-replicated "three replicas on one machine"
plot_scale scale mq "plain INSERT" "mq / plain"
plot_scale scale-replicated "RF 3, acks=all" "one node" "RF 3 / one node"
plot_scale_log
plot_many_topics
ls "$OUTDIR"/*.svg
