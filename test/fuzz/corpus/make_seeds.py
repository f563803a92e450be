#!/usr/bin/env python3
"""Writes the committed seed corpora of the lcc fuzzers (test/fuzz/CMakeLists.txt).

Standard library only; run it from anywhere (it writes beside itself):

    python3 test/fuzz/corpus/make_seeds.py

  trainbin/     small train.bin containers (docs/train-bin.md) with manifests:
                one process, world-size variants with shard slots, pipeline
                stages, a CUDA program, initial parameters as safetensors
  safetensors/  checkpoints: with checksums, ZeRO / tensor-parallel pieces,
                half-precision and bool tensors
  data/         token files, each behind the 4 option bytes DataFuzz.cpp reads
  hf/           config.json, model.safetensors.index.json and weights of the
                tiny GPT-2 and LLaMA that HfFuzz.cpp reads against

Every file stays well under 20 KB. The output is deterministic.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# --- CRC-32C (Castagnoli), reflected, as runtime/support/Crc32c.h --------------
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


# --- safetensors --------------------------------------------------------------
def f32(values):
    return struct.pack("<%df" % len(values), *values)


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)]; the header padded to 8 bytes."""
    header, body = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (len(text) + 8) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + body


def with_checksums(tensors, metadata):
    """Checkpoint metadata as runtime/train/Checkpoint.cpp's addChecksums."""
    meta = dict(metadata)
    for name, _, _, data in tensors:
        meta["lcc.crc32c." + name] = "%08x" % crc32c(data)
    crc = 0
    for key in sorted(meta, key=lambda k: k.encode()):
        if key.startswith("lcc.crc32c"):
            continue
        crc = crc32c(("%s=%s\n" % (key, meta[key])).encode(), crc)
    meta["lcc.crc32c"] = "%08x" % crc
    return meta


def ramp(n, scale=0.125):
    return f32([scale * (i % 7 - 3) for i in range(n)])


# --- train.bin ----------------------------------------------------------------
def label(s):
    b = s.encode()
    assert 1 <= len(b) <= 32
    return b + b"\0" * (32 - len(b))


def trainbin(sections):
    """sections: [(name, target, rank, bytes)], laid out as lcc's writer does."""
    count = len(sections)
    table_end = 64 + 96 * count
    offsets, at = [], (table_end + 63) // 64 * 64
    for _, _, _, payload in sections:
        offsets.append(at)
        at = (at + len(payload) + 63) // 64 * 64 if payload else at
    size = offsets[-1] + len(sections[-1][3]) if sections else table_end
    table = b""
    for (name, target, rank, payload), off in zip(sections, offsets):
        table += label(name) + label(target) + struct.pack(
            "<QQiI8x", off, len(payload), rank, crc32c(payload))
    header = b"LCCTRAIN" + struct.pack("<IIQQQI16x", 1, 0, count, 64, size, crc32c(table))
    header += struct.pack("<I", crc32c(header))
    out = bytearray(size)
    out[0:64] = header
    out[64:table_end] = table
    for (_, _, _, payload), off in zip(sections, offsets):
        out[off:off + len(payload)] = payload
    return bytes(out)


def slot(role, name, shape, dtype="f32", out=False, **extra):
    s = {"role": role, "name": name, "out": out, "dtype": dtype, "shape": shape}
    s.update(extra)
    return s


def manifest(functions, params, state, groups=None, sharding="none", **extra):
    m = {"format": "lcc-train-bin", "version": 1, "model": "fuzz", "source": "fuzz.lcc",
         "seed": 1337, "config": {"vocab": 16, "batch": 2, "seq": 4},
         "training": {"optimizer": "adamw", "lr": 0.001, "accum": 1},
         "params": params, "state": state,
         "inputs": [slot("input", "tokens", [2, 4], "i32"), slot("input", "targets", [2, 4], "i32")],
         "functions": functions, "process_groups": groups or [], "sharding": sharding}
    m.update(extra)
    return json.dumps(m, separators=(",", ":")).encode()


def one_process():
    params = [slot("param", "wte", [16, 8], frozen=False), slot("param", "b", [8], frozen=True)]
    state = [slot("state", "m:wte", [16, 8]), slot("state", "v:wte", [16, 8])]
    arena = slot("workspace", "arena", [4096], "i8")
    functions = {
        "init": [dict(p, out=True) for p in params] + [arena],
        "forward": params + [slot("input", "tokens", [2, 4], "i32"),
                             slot("input", "targets", [2, 4], "i32"),
                             slot("output", "loss", [], out=True), arena],
        "train_step": params + state + [slot("step", "step", [], "i64"),
                                        slot("input", "tokens", [2, 4], "i32"),
                                        slot("output", "loss", [], out=True),
                                        slot("output", "grad_norm", [], out=True), arena],
        "decode_step": params + [slot("input", "position", [], "i64"),
                                 slot("output", "logits", [1, 16], out=True)],
    }
    return functions, params, state


def seeds_trainbin():
    functions, params, state = one_process()
    yield "one-process.bin", trainbin([
        ("manifest", "any", -1, manifest(functions, params, state)),
        ("code", "cpu-x86_64-v3", -1, b"\x7fELF not really code")])
    # Initial parameters as data (an ONNX model's train.bin).
    weights = safetensors([("b", "F32", [8], ramp(8)), ("wte", "F32", [16, 8], ramp(128))])
    yield "params.bin", trainbin([
        ("manifest", "any", -1, manifest(functions, params, state)),
        ("params", "any", -1, weights),
        ("onnx", "any", -1, b"\x08\x07\x12\x04lcc")])
    # Two world sizes; ZeRO pieces (flat) and a tensor-parallel piece.
    zparams = [slot("param", "wte", [64], shard={"group": "dp", "parts": 2, "shape": [16, 8]}),
               slot("param", "w", [8, 2], shard={"group": "tp", "parts": 2, "shape": [8, 4],
                                                 "dim": 1, "blocks": 1}),
               slot("param", "qkv", [4, 6], shard={"group": "tp", "parts": 2, "shape": [4, 12],
                                                   "dim": 1, "blocks": 3}),
               slot("param", "v", [4], shard={"group": "dp", "parts": 2, "shape": [4, 2],
                                              "within": {"group": "tp", "parts": 2,
                                                         "shape": [4, 4], "dim": 1}})]
    zstate = [dict(p, role="state", name="m:" + p["name"]) for p in zparams]
    zfunctions = {"init": [slot("param", "wte", [16, 8], out=True)],
                  "train_step": zparams + zstate + [slot("output", "loss", [], out=True)]}
    yield "worlds.bin", trainbin([
        ("manifest.w1", "any", -1, manifest(*one_process())),
        ("manifest.w4", "any", -1, manifest(zfunctions, zparams, zstate,
                                            [{"name": "dp", "size": 2}, {"name": "tp", "size": 2}],
                                            "zero3")),
        ("code.w4", "cpu-x86_64", -1, b"code")])
    # Pipeline stages, with a group of some ranks of the pp axis.
    groups = [{"name": "dp", "size": 2}, {"name": "pp", "size": 2},
              {"name": "pp_ends", "size": 2, "of": "pp", "members": [0, 1]}]
    stage = manifest(*one_process(), groups=groups, sharding="dp")
    yield "stages.bin", trainbin([
        ("manifest.w4.s0", "any", -1, stage), ("manifest.w4.s1", "any", -1, stage),
        ("code.w4.s0", "cpu-x86_64-v3", -1, b""), ("code.w4.s1", "cpu-x86_64-v3", 1, b"x")])
    # A CUDA program: kernel names and the PTX / cubin sections.
    yield "cuda.bin", trainbin([
        ("manifest", "any", -1, manifest(*one_process(), target="cuda",
                                         cuda={"arch": "sm_90", "kernels": ["k0", "k1"]})),
        ("cuda.ptx", "cuda-ptx", -1, b".version 8.0\n.target sm_90\n"),
        ("cuda.cubin", "cuda-sm_90", -1, b"\x7fELF cubin"),
        ("cuda.host", "cpu-x86_64-v3", -1, b"\x7fELF host")])
    yield "empty-section.bin", trainbin([("config", "any", -1, b"hi"), ("plan", "any", 3, b"")])
    # Regressions (docs/reliability.md, "Fuzzers"): a memory plan whose sizes
    # overflow; a shard of 2^32 blocks x 2^32 parts (2^64 wrapped to 0, then
    # used as a divisor); process groups whose sizes do not fit an int.
    def bare(**fields):
        m = {"format": "lcc-train-bin", "version": 1, "functions": {}}
        m.update(fields)
        return json.dumps(m).encode()
    yield "regress-plan-overflow.bin", trainbin([("manifest", "any", -1, bare(
        params=[slot("param", "w", [4294967296, 4294967296])], state=[]))])
    yield "regress-shard-wrap.bin", trainbin([("manifest", "any", -1, bare(functions={"f": [
        slot("param", "w", [0], shard={"group": "dp", "parts": 1 << 32, "shape": [0],
                                       "dim": 0, "blocks": 1 << 32})]}))])
    yield "regress-group-size.bin", trainbin([("manifest.w2.s0", "any", -1, bare(
        process_groups=[{"name": "pp", "size": 1 << 32}, {"name": "dp", "size": (1 << 32) + 2}]))])


def seeds_safetensors():
    w = ramp(12)
    tensors = [("wte", "F32", [3, 4], w), ("step", "I64", [], struct.pack("<q", 7)),
               ("mask", "BOOL", [2, 2], bytes([0, 1, 1, 0]))]
    yield "checkpoint.safetensors", safetensors(
        tensors, with_checksums(tensors, {"lcc.step": "7", "lcc.data_seed": "1337",
                                          "lcc.data_order": "random"}))
    yield "no-checksums.safetensors", safetensors(tensors, {"lcc.step": "7"})
    # One rank's file of a step directory: a flat ZeRO piece (9 elements in
    # 2 pieces of 5), a tensor-parallel piece of a fused projection (3 blocks),
    # a ZeRO piece of a tensor-parallel piece, and a whole tensor.
    pieces = [("a", "F32", [5], ramp(5)), ("qkv", "F32", [4, 6], ramp(24)),
              ("v", "F32", [4], ramp(4)), ("whole", "F32", [2], ramp(2))]
    meta = {"lcc.step": "3", "lcc.shard.a": "2:0:3x3", "lcc.shard.qkv": "2:1:4x12:1:3",
            "lcc.shard.v": "2:0:4x2|2:1:4x4:1:1"}
    yield "rank-piece.safetensors", safetensors(pieces, with_checksums(pieces, meta))
    yield "vocab-piece.safetensors", safetensors(
        [("wte", "F32", [3, 2], ramp(6))], {"lcc.shard.wte": "3:2:7x2:0:1"})
    # Hugging Face weights: half precision (widened to F32 on request).
    yield "half.safetensors", safetensors(
        [("h", "F16", [2, 2], struct.pack("<4H", 0x3C00, 0x0001, 0x7C00, 0x8400)),
         ("b", "BF16", [3], struct.pack("<3H", 0x3F80, 0xFF80, 0x0001))], {"format": "pt"})
    yield "unsupported.safetensors", safetensors([("u", "U8", [2], b"\x01\x02")])
    yield "empty.safetensors", safetensors([], None)
    # Regressions: blocks x parts wrapping to 0; 10^14 blocks of an empty
    # tensor (a loop over them); parts x within-parts overflowing.
    empty = [("t", "F32", [0], b"")]
    yield "regress-shard-wrap.safetensors", safetensors(
        empty, {"lcc.shard.t": "4294967296:0:0:0:4294967296"})
    yield "regress-empty-blocks.safetensors", safetensors(
        [("t", "F32", [200000000000000, 0], b"")],
        {"lcc.shard.t": "1:0:200000000000000x0:0:100000000000000"})
    yield "regress-within-overflow.safetensors", safetensors(
        empty, {"lcc.shard.t": "100000000000000:0:0|100000000000000:0:0"})


TINY_GPT2 = {"vocab": 8, "positions": 4, "dim": 4, "inner": 16}
TINY_LLAMA = {"vocab": 8, "dim": 4, "q": 4, "kv": 2, "inner": 8}


def gpt2_tensors(dtype="F32"):
    v, p, d, i = TINY_GPT2["vocab"], TINY_GPT2["positions"], TINY_GPT2["dim"], TINY_GPT2["inner"]
    shapes = [("transformer.wte.weight", [v, d]), ("transformer.wpe.weight", [p, d])]
    h = "transformer.h.0."
    shapes += [(h + "ln_1.weight", [d]), (h + "ln_1.bias", [d]),
               (h + "attn.c_attn.weight", [d, 3 * d]), (h + "attn.c_attn.bias", [3 * d]),
               (h + "attn.c_proj.weight", [d, d]), (h + "attn.c_proj.bias", [d]),
               (h + "ln_2.weight", [d]), (h + "ln_2.bias", [d]),
               (h + "mlp.c_fc.weight", [d, i]), (h + "mlp.c_fc.bias", [i]),
               (h + "mlp.c_proj.weight", [i, d]), (h + "mlp.c_proj.bias", [d]),
               ("transformer.ln_f.weight", [d]), ("transformer.ln_f.bias", [d]),
               ("transformer.h.0.attn.bias", [1])]
    return [(n, dtype, s, elements(dtype, s)) for n, s in shapes]


def llama_tensors(dtype="F32"):
    v, d, q, kv, i = (TINY_LLAMA[k] for k in ("vocab", "dim", "q", "kv", "inner"))
    l = "model.layers.0."
    shapes = [("model.embed_tokens.weight", [v, d]), (l + "input_layernorm.weight", [d]),
              (l + "self_attn.q_proj.weight", [q, d]), (l + "self_attn.k_proj.weight", [kv, d]),
              (l + "self_attn.v_proj.weight", [kv, d]), (l + "self_attn.o_proj.weight", [d, q]),
              (l + "post_attention_layernorm.weight", [d]), (l + "mlp.gate_proj.weight", [i, d]),
              (l + "mlp.up_proj.weight", [i, d]), (l + "mlp.down_proj.weight", [d, i]),
              ("model.norm.weight", [d]), ("lm_head.weight", [v, d])]
    return [(n, dtype, s, elements(dtype, s)) for n, s in shapes]


def elements(dtype, shape):
    n = 1
    for s in shape:
        n *= s
    if dtype == "F32":
        return ramp(n)
    return struct.pack("<%dH" % n, *[(0x3C00 if dtype == "F16" else 0x3F80) ^ k for k in range(n)])


def seeds_hf():
    yield "gpt2-config.json", json.dumps({
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 8,
        "n_positions": 4, "n_embd": 4, "n_layer": 1, "n_head": 2, "n_inner": None,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
        "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
        "bos_token_id": 0, "transformers_version": "5.0.0"}, indent=1).encode()
    yield "llama-config.json", json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 8,
        "hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 2,
        "max_position_embeddings": 16, "rms_norm_eps": 1e-6, "hidden_act": "silu",
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "linear", "factor": 2.0},
        "tie_word_embeddings": False}, indent=1).encode()
    # An export's parameter of another name (HfFuzz.cpp's "_fuzz_param").
    yield "gpt2-extra-param.json", json.dumps({
        "architectures": ["GPT2LMHeadModel"], "n_head": 2, "layer_norm_epsilon": 1e-5,
        "_fuzz_param": "h.1.mlp.c_fc.weight"}).encode()
    # Regression: hidden_size 0 made LLaMA's head dimension 0, then a divisor.
    yield "regress-llama-hidden-0.json", json.dumps({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 0, "num_attention_heads": 2}).encode()
    # Regression: a layer number past int64 (std::stoll threw out_of_range).
    yield "regress-gpt2-layer-overflow.json", json.dumps({
        "architectures": ["GPT2LMHeadModel"], "n_head": 2, "layer_norm_epsilon": 1e-5,
        "_fuzz_param": "h.92233720368547758070.mlp.c_fc.weight"}).encode()
    yield "index.json", json.dumps({
        "metadata": {"total_size": 1234},
        "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                       "model.norm.weight": "model-00002-of-00002.safetensors",
                       "lm_head.weight": "model-00002-of-00002.safetensors"}}).encode()
    yield "gpt2.safetensors", safetensors(gpt2_tensors(), {"format": "pt"})
    yield "gpt2-bf16.safetensors", safetensors(gpt2_tensors("BF16"), {"format": "pt"})
    yield "llama.safetensors", safetensors(llama_tensors(), {"format": "pt"})
    yield "llama-f16.safetensors", safetensors(llama_tensors("F16"))


def llmc(magic, version, tokens, fmt):
    header = struct.pack("<256i", magic, version, len(tokens), *([0] * 253))
    return header + struct.pack("<%d%s" % (len(tokens), fmt), *tokens)


def options(fmt, ext, val, vocab, seq, batch):
    """DataFuzz.cpp's 4 option bytes."""
    return bytes([fmt | ext << 2 | val << 4, vocab, seq, batch])


def seeds_data():
    auto, u16, u32, byte = 0, 1, 2, 3
    bin_, u16x, u32x, txt = 0, 1, 2, 3
    toks = [(7 * i) % 50 for i in range(40)]
    yield "llmc-gpt2.bin", options(auto, bin_, 0, 49, 7, 2) + llmc(20240520, 1, toks, "H")
    yield "llmc-u32.bin", options(u32, bin_, 0, 49, 3, 3) + llmc(20240520, 2, toks, "I")
    yield "llmc-llama3.bin", options(auto, u32x, 2, 49, 4, 1) + llmc(20240801, 7, toks, "I")
    yield "u16.bin", options(u16, u16x, 2, 49, 5, 4) + struct.pack("<40H", *toks)
    yield "u32.bin", options(auto, u32x, 3, 49, 2, 2) + struct.pack("<40I", *toks)
    yield "bytes.bin", options(byte, txt, 0, 239, 9, 2) + b"In the beginning God created the heaven."
    yield "auto-text.bin", options(auto, txt, 2, 255, 4, 8) + b"And the earth was without form."


def main():
    for folder, seeds in [("trainbin", seeds_trainbin()), ("safetensors", seeds_safetensors()),
                          ("data", seeds_data()), ("hf", seeds_hf())]:
        os.makedirs(os.path.join(HERE, folder), exist_ok=True)
        for name, data in seeds:
            assert len(data) < 20000, (name, len(data))
            with open(os.path.join(HERE, folder, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
