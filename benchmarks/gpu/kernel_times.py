"""Sums ncu's per-kernel durations (gpu__time_duration.sum, --csv
--print-units base) by kernel name: where one lcc training step spends its
GPU time. Usage: kernel_times.py NCU_CSV [TOP]"""
import collections
import csv
import sys

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
lines = open(path).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    print("no ncu table in", path)
    print("\n".join(lines[:20]))
    sys.exit(1)
total = collections.Counter()
count = collections.Counter()
for r in csv.DictReader(lines[start:]):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"].split("(")[0][:70]
    ns = float(r["Metric Value"].replace(",", ""))
    total[name] += ns
    count[name] += 1
all_ns = sum(total.values())
print(f"{sum(count.values())} kernel launches, {all_ns / 1e6:.2f} ms of GPU time")
print("| kernel | launches | ms | share |\n|---|---:|---:|---:|")
for name, ns in total.most_common(top):
    print(f"| {name} | {count[name]} | {ns / 1e6:.3f} | {100 * ns / all_ns:.1f}% |")
