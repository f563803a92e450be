#!/usr/bin/env python3
"""Checks of lcc-run's outputs, used by lcc-run.test (no third-party modules).

  check_training.py falls CSV CORPUS      the loss fell below the corpus' unigram entropy
                                          (CORPUS: bytes, or uint16 symbols if it ends in .u16)
  check_training.py same CSV_A CSV_B FROM TO   losses of steps FROM..TO are identical
  check_training.py same-rows CSV_A CSV_B  the same steps with the same values in every
                                          column but the timings (tokens_per_s, elapsed_s)
  check_training.py loss-at CSV_A STEP_A CSV_B STEP_B RTOL
                                          A's loss at STEP_A and B's at STEP_B within RTOL
                                          (relative; 0: the same digits)
  check_training.py same-tensors A.safetensors B.safetensors PREFIX
                                          every tensor of A equals B's PREFIX+name, bytewise
  check_training.py close CSV_A CSV_B FROM TO RTOL
                                          B ran exactly steps FROM..TO, A ran them too, and
                                          each loss and grad norm of B is within RTOL
                                          (relative) of A's
  check_training.py pytorch TORCH_CSV CSV FIRST_RTOL RTOL
                                          lcc-run's CSV against PyTorch's run of the same
                                          steps (columns step, loss, grad_norm; made by
                                          test/fixtures/onnx/hf_exports.py): the same steps,
                                          the initial loss within FIRST_RTOL and every loss
                                          and grad norm within RTOL (relative)
  check_training.py near CSV_A CSV_B ABS REL
                                          mixed precision (A) against fp32 (B): at every
                                          step |loss_A - loss_B| <= ABS + REL * loss_B; A
                                          differs from B somewhere (the policy changed the
                                          arithmetic); A learns (its last loss is more
                                          than 1 nat below its first)
  check_training.py loss-scale LOG WINDOW [--skips-first]
                                          lcc-run's progress lines (--log-every 1) of an fp16
                                          run follow torch.amp.GradScaler's rule: a skipped
                                          step (non-finite grad norm) halves the scale, WINDOW
                                          finite steps in a row double it, otherwise it stays;
                                          the loss stays finite. --skips-first: step 1 was
                                          skipped (injected overflow), finite steps follow,
                                          and the scale grew at least once
  check_training.py amp-state CKPT SKIPPED LOG2 GOOD
                                          a checkpoint's loss-scaling state has these values
                                          and its optimizer state (m, v) is all zero
  check_training.py plan-allocated LOG...  every log (lcc-run's output, a rank's --log-dir
                                          file) says "memory: plan N bytes, allocated N
                                          bytes": the runtime allocated exactly the plan
  check_training.py close-tensors A.safetensors B.safetensors RTOL TENSOR_RTOL
                                          the same f32 tensors; the relative 2-norm error
                                          |B - A| / |A| over all of them <= RTOL, and of
                                          each one <= TENSOR_RTOL. Why two bounds: a
                                          parameter whose exact gradient is zero (the
                                          attention key bias: softmax ignores a shift of
                                          all keys) is moved by AdamW on rounding noise
                                          alone (m / sqrt(v) of noise is O(lr)), so any
                                          other summation order changes it at ~1e-4.
"""
import array
import collections
import csv
import json
import math
import re
import sys


def rows(path):
    with open(path) as f:
        return {int(r["step"]): r for r in csv.DictReader(f)}


def compare_steps(a, b, steps, bound):
    """Each step's loss and grad norm of B against A's, relative, within bound(step, key);
    a step both skipped (fp16 overflow: inf or NaN in both) passes. The largest error, or
    None after printing the first failure."""
    worst = 0.0
    for step in steps:
        for key in ("loss", "grad_norm"):
            x, y = float(a[step][key]), float(b[step][key])
            if not (math.isfinite(x) and math.isfinite(y)):
                if math.isfinite(x) or math.isfinite(y):
                    print(f"FAIL: step {step} {key}: {y} vs {x}")
                    return None
                continue
            err = abs(y - x) / max(abs(x), 1e-30)
            if not err <= bound(step, key):
                print(f"FAIL: step {step} {key}: {y!r} vs {x!r} (relative error {err:.3g} > "
                      f"{bound(step, key):g})")
                return None
            worst = max(worst, err)
    return worst


def main(argv):
    if argv[1] == "falls":
        data = open(argv[3], "rb").read()
        symbols = argv[3].endswith(".u16")
        if symbols:
            data = array.array("H", data)
        counts = collections.Counter(data)
        # A model that learned only byte frequencies reaches the unigram
        # entropy; below it (with margin) the model uses context.
        entropy = -sum(c / len(data) * math.log(c / len(data)) for c in counts.values())
        r = rows(argv[2])
        last = r[max(r)]
        first = r[min(r)]
        threshold = entropy - 0.25
        val = float(last["val_loss"])
        print(f"unigram entropy {entropy:.4f} nats, threshold {threshold:.4f}, "
              f"first loss {float(first['loss']):.4f}, final val loss {val:.4f}")
        # The untrained model must start above what it is asked to reach.
        start = entropy + 1.0 if symbols else 5.0
        if not (float(first["loss"]) > start and val < threshold):
            print("FAIL: the loss did not fall below the threshold")
            return 1
        return 0
    if argv[1] == "same-rows":
        a, b = rows(argv[2]), rows(argv[3])
        timing = {"tokens_per_s", "elapsed_s"}
        strip = lambda r: {k: v for k, v in r.items() if k not in timing}
        if sorted(a) != sorted(b):
            print(f"FAIL: steps {sorted(a)} != {sorted(b)}")
            return 1
        bad = [s for s in sorted(a) if strip(a[s]) != strip(b[s])]
        evals = sum(1 for r in a.values() if r["val_loss"])
        print(f"same-rows: {len(a)} steps, {evals} with a val loss, {len(bad)} differ")
        if bad:
            print(f"FAIL: step {bad[0]}: {strip(a[bad[0]])} != {strip(b[bad[0]])}")
            return 1
        return 0
    if argv[1] == "near":
        a, b = rows(argv[2]), rows(argv[3])
        tol_abs, tol_rel = float(argv[4]), float(argv[5])
        if sorted(a) != sorted(b):
            print("FAIL: the runs have different steps")
            return 1
        worst, at, bad = 0.0, 0, []
        for step in sorted(b):
            la, lb = float(a[step]["loss"]), float(b[step]["loss"])
            d = abs(la - lb)
            if d > worst:
                worst, at = d, step
            if not d <= tol_abs + tol_rel * abs(lb):
                bad.append(step)
        first, last = float(a[min(a)]["loss"]), float(a[max(a)]["loss"])
        print(f"near: {len(b)} steps, max |diff| {worst:.4f} at step {at}, "
              f"{'differs' if worst > 0 else 'identical'}; loss {first:.4f} -> {last:.4f}")
        if bad:
            print(f"FAIL: outside {tol_abs} + {tol_rel} x loss at steps {bad[:5]}")
            return 1
        if worst == 0:
            print("FAIL: identical losses: the precision policy changed nothing")
            return 1
        if not last < first - 1.0:
            print("FAIL: the mixed-precision run does not learn")
            return 1
        return 0
    if argv[1] == "same":
        a, b = rows(argv[2]), rows(argv[3])
        lo, hi = int(argv[4]), int(argv[5])
        for step in range(lo, hi + 1):
            for key in ("loss", "grad_norm", "lr"):
                if a[step][key] != b[step][key]:
                    print(f"FAIL: step {step} {key}: {a[step][key]} != {b[step][key]}")
                    return 1
        print(f"steps {lo}..{hi}: identical")
        return 0
    if argv[1] == "loss-at":
        a, b = rows(argv[2])[int(argv[3])]["loss"], rows(argv[4])[int(argv[5])]["loss"]
        rtol = float(argv[6])
        err = abs(float(a) - float(b)) / abs(float(a))
        print(f"loss {a} (step {argv[3]}) vs {b} (step {argv[5]}): relative difference {err:.2g}")
        if (rtol == 0 and a != b) or err > rtol:
            print(f"FAIL: more than {rtol:g}")
            return 1
        return 0
    if argv[1] == "same-tensors":
        a, b = safetensors(argv[2]), safetensors(argv[3])
        for name, (dtype, shape, data) in a.items():
            other = b.get(argv[4] + name)
            if other != (dtype, shape, data):
                print(f"FAIL: {name} differs from {argv[4] + name}")
                return 1
        print(f"{len(a)} tensors identical")
        return 0
    if argv[1] == "close":
        a, b = rows(argv[2]), rows(argv[3])
        lo, hi, rtol = int(argv[4]), int(argv[5]), float(argv[6])
        steps = list(range(lo, hi + 1))
        if sorted(b) != steps or not set(steps) <= set(a):
            print(f"FAIL: expected steps {lo}..{hi}, got {sorted(b)} (and {sorted(a)})")
            return 1
        worst = compare_steps(a, b, steps, lambda step, key: rtol)
        if worst is None:
            return 1
        print(f"steps {lo}..{hi}: largest relative error {worst:.3g}")
        return 0
    if argv[1] == "pytorch":
        want, got = rows(argv[2]), rows(argv[3])
        first_rtol, rtol = float(argv[4]), float(argv[5])
        if sorted(want) != sorted(got) or not want:
            print(f"FAIL: steps {sorted(got)}, PyTorch ran {sorted(want)}")
            return 1
        first = min(want)
        worst = compare_steps(want, got, sorted(want), lambda step, key: first_rtol
                              if step == first and key == "loss" else rtol)
        if worst is None:
            return 1
        print(f"{len(want)} steps: largest relative error {worst:.3g}")
        return 0
    if argv[1] == "plan-allocated":
        for path in argv[2:]:
            m = re.search(r"memory: plan ([0-9]+) bytes, allocated ([0-9]+) bytes", open(path).read())
            if not m or m.group(1) != m.group(2):
                print(f"FAIL: {path}: {m.group(0) if m else 'no memory line'}")
                return 1
        print(f"{len(argv) - 2} logs: allocated exactly the plan")
        return 0
    if argv[1] == "loss-scale":
        return loss_scale(argv[2], int(argv[3]), "--skips-first" in argv[4:])
    if argv[1] == "amp-state":
        tensors = safetensors(argv[2])
        want = {"skipped": float(argv[3]), "log2_scale": float(argv[4]),
                "good_steps": float(argv[5])}
        got = {}
        for name, (dtype, shape, data) in tensors.items():
            if "amp:" in name:
                got[name.split("amp:")[1]] = array.array("f", data)[0]
            elif name.split(":")[0].split(".")[-1] in ("m", "v") and ":" in name:
                if any(array.array("f", data)):
                    print(f"FAIL: optimizer state {name} is not zero")
                    return 1
        if got != want:
            print(f"FAIL: amp state {got}, expected {want}")
            return 1
        print(f"amp state: skipped {got['skipped']:g}, log2_scale {got['log2_scale']:g}, "
              f"good_steps {got['good_steps']:g}; optimizer state all zero")
        return 0
    if argv[1] == "close-tensors":
        a, b = safetensors(argv[2]), safetensors(argv[3])
        rtol, tensor_rtol = float(argv[4]), float(argv[5])
        total_diff = total_norm = 0.0
        if sorted(a) != sorted(b):
            print(f"FAIL: different tensors: {sorted(set(a) ^ set(b))}")
            return 1
        worst = 0.0
        for name, (dtype, shape, data) in a.items():
            odtype, oshape, odata = b[name]
            if (dtype, shape) != (odtype, oshape) or dtype != "F32":
                print(f"FAIL: {name}: {odtype}{list(oshape)} vs {dtype}{list(shape)}")
                return 1
            x, y = array.array("f", data), array.array("f", odata)
            diff = math.sqrt(sum((u - v) ** 2 for u, v in zip(x, y)))
            norm = math.sqrt(sum(u * u for u in x))
            total_diff += diff * diff
            total_norm += norm * norm
            err = diff / norm if norm else diff
            worst = max(worst, err)
            if not err <= tensor_rtol:
                print(f"FAIL: {name}: relative 2-norm error {err:.3g}")
                return 1
        total = math.sqrt(total_diff / total_norm)
        print(f"{len(a)} tensors: relative error {total:.3g} over all, largest per tensor "
              f"{worst:.3g}")
        if not total <= rtol:
            print(f"FAIL: relative error over all tensors {total:.3g} > {rtol}")
            return 1
        return 0
    return 2


def loss_scale(path, window, skips_first):
    pattern = re.compile(r"^step\s+(\d+)/\d+ \| loss (\S+) .*\| gnorm (\S+) .*"
                         r"\| scale (\S+)( \| skipped \(overflow\))?$")
    steps = []
    for line in open(path):
        m = pattern.match(line.strip())
        if m:
            steps.append((int(m[1]), float(m[2]), float(m[3]), float(m[4]), bool(m[5])))
    if not steps or [s[0] for s in steps] != list(range(1, len(steps) + 1)):
        print(f"FAIL: expected a progress line with a scale for every step in {path}")
        return 1
    good = doublings = 0
    for (step, loss, norm, scale, skipped), nxt in zip(steps, steps[1:] + [None]):
        if not math.isfinite(loss):
            print(f"FAIL: step {step}: loss {loss}")
            return 1
        if skipped == math.isfinite(norm):
            print(f"FAIL: step {step}: marked {'skipped' if skipped else 'taken'} with "
                  f"grad norm {norm}")
            return 1
        if skipped:
            good, want = 0, scale / 2
        else:
            good += 1
            want = scale
            if good == window:
                good, want = 0, scale * 2
                doublings += 1
        if nxt and not abs(nxt[3] - want) <= 1e-5 * want:
            print(f"FAIL: step {step + 1}: scale {nxt[3]:g}, GradScaler's rule gives {want:g}")
            return 1
    skips = [s[0] for s in steps if s[4]]
    run = 0
    while run < len(steps) and steps[run][4]:
        run += 1
    print(f"loss scale: {len(steps)} steps, {len(skips)} skipped, the first {run} in a row; "
          f"{doublings} doublings; GradScaler's rule holds")
    if skips_first and not (run >= 1 and run < len(steps) and doublings >= 1):
        print("FAIL: expected skipped steps first, then recovery and growth")
        return 1
    return 0


def safetensors(path):
    """name -> (dtype, shape, bytes) of a safetensors file."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), raw[8 + n + lo:8 + n + hi])
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
