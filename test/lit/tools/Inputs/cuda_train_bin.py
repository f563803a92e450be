"""Checks the CUDA sections of a train.bin (lcc --target=cuda), independently
of lcc's reader: the container layout is docs/train-bin.md's.

Prints one line per section (name, target, size), then checks that
 - the manifest's cuda.kernels list every kernel the PTX defines (.entry),
   and nothing else;
 - the cubin is an ELF for the architecture, holding each kernel's code
   (section .text.<name>);
 - the host code is an ELF shared object exporting lcc_train_step;
 - with --min-vectorized N: at least N kernels use 128-bit global loads or
   stores (ld/st.global.v4 of 32-bit elements: lcc-gpu-kernels' lanes);
 - with --world N: the code for N ranks of a train.bin compiled for several
   (sections suffixed .wN); the host code calls the GPU runtime's
   collectives (lcc_cuda_*), never the CPU's.
Exits 1 with the reason on the first mismatch."""
import json
import re
import struct
import sys


def sections(path):
    data = open(path, "rb").read()
    assert data[:8] == b"LCCTRAIN", "not a train.bin"
    count, table = struct.unpack_from("<QQ", data, 16)
    out = {}
    for i in range(count):
        entry = data[table + 96 * i: table + 96 * (i + 1)]
        name = entry[:32].rstrip(b"\0").decode()
        target = entry[32:64].rstrip(b"\0").decode()
        offset, size = struct.unpack_from("<QQ", entry, 64)
        out[name] = (target, data[offset:offset + size])
    return out


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    s = sections(sys.argv[1])
    for name, (target, payload) in s.items():
        print(f"section {name} {target} {len(payload) > 0}")
    if "--world" in sys.argv:
        suffix = ".w" + sys.argv[sys.argv.index("--world") + 1]
        if any(n.endswith(suffix) for n in s):  # else the file has one world
            s = {n[:-len(suffix)]: v for n, v in s.items() if n.endswith(suffix)}
        host = s["cuda.host"][1]
        calls = sorted(set(re.findall(rb"lcc_(?:cuda_)?(?:all_reduce|all_gather|reduce_scatter|"
                                      rb"broadcast|send|recv|wait)\w*", host)))
        print("collectives: " + " ".join(c.decode() for c in calls))
        if not calls or any(not c.startswith(b"lcc_cuda_") for c in calls):
            fail("the host code must call the GPU runtime's collectives only")
    manifest = json.loads(s["manifest"][1])
    kernels = manifest["cuda"]["kernels"]
    ptx = s["cuda.ptx"][1].decode()
    entries = re.findall(r"^\.visible \.entry (\w+)\(", ptx, re.M)
    if sorted(entries) != sorted(kernels):
        fail(f"PTX entries {len(entries)} != manifest kernels {len(kernels)}")
    if len(set(kernels)) != len(kernels):
        fail("a kernel is listed twice")
    cubin = s["cuda.cubin"][1]
    if cubin[:4] != b"\x7fELF":
        fail("the cubin is not an ELF file")
    missing = [k for k in kernels if (".text." + k + "\0").encode() not in cubin]
    if missing:
        fail(f"the cubin lacks the code of {missing[:3]}")
    host = s["cuda.host"][1]
    if host[:4] != b"\x7fELF" or b"lcc_train_step\0" not in host:
        fail("the host code is not a shared object exporting lcc_train_step")
    bodies = re.split(r"\n(?=\.visible \.entry )", ptx)[1:]
    wide = sum(1 for b in bodies if re.search(r"(ld|st)\.global(\.nc)?\.v4\.[bfu]32", b))
    print(f"vectorized: {wide} of {len(bodies)} kernels use 128-bit loads or stores")
    if "--min-vectorized" in sys.argv:
        least = int(sys.argv[sys.argv.index("--min-vectorized") + 1])
        if wide < least:
            fail(f"only {wide} kernels use 128-bit accesses, expected at least {least}")
    print(f"target {manifest['target']} arch {manifest['cuda']['arch']} "
          f"kernels {len(kernels)} ok")


main()
