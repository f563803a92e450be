//===- Package.cpp - write a compiled model as train.bin ------------------===//
#include "compiler/package/Package.h"

#include "passes/pipeline/PipelineStep.h"
#include "runtime/support/Entries.h"
#include "runtime/support/TrainBin.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;

namespace lcc {

/// Bumped whenever the manifest's meaning changes; the runtime refuses other
/// versions (runtime/cpu/CpuProgram.cpp, kManifestVersion there).
constexpr int kManifestVersion = 1;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "lcc: " + message);
}

static std::optional<std::string> dtypeOf(Type t) {
  if (t.isF32()) return "f32";
  if (t.isF64()) return "f64";
  if (t.isInteger(32)) return "i32";
  if (t.isInteger(64)) return "i64";
  if (t.isInteger(1)) return "i1";
  return std::nullopt;
}

/// {"role", "name", "out", "dtype", "shape"} for one buffer.
static llvm::Expected<json::Value> slot(const char *role, llvm::StringRef name, bool out,
                                        Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  auto dtype = tensor ? dtypeOf(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !dtype)
  {
    std::string spelling;
    llvm::raw_string_ostream os(spelling);
    type.print(os);
    return error("cannot package a buffer of type " + spelling + " ('" + name + "')");
  }
  json::Value shape = json::Value::array();
  for (int64_t d : tensor.getShape())
    shape.push(json::Value(static_cast<long long>(d)));
  return json::Value::object({{"role", role},
                              {"name", name.str()},
                              {"out", out},
                              {"dtype", *dtype},
                              {"shape", std::move(shape)}});
}

static llvm::Expected<json::Value> slotRole(DictionaryAttr attrs, bool out, Type type,
                                            llvm::StringRef what);

/// The runtime's description of an lcc.shard attribute: {"group", "parts",
/// "shape" (the whole tensor's)}, "dim"/"blocks" for a split along one
/// dimension, and "within" for the tensor-parallel piece a ZeRO part is cut
/// from (the attribute's own "within").
static llvm::Expected<json::Value> shardSpec(DictionaryAttr shard, llvm::StringRef what) {
  auto group = shard.getAs<StringAttr>("group");
  auto parts = shard.getAs<IntegerAttr>("parts");
  auto shape = shard.getAs<DenseI64ArrayAttr>("shape");
  if (!group || !parts || !shape)
    return error(what + " has a malformed lcc.shard attribute");
  json::Value full = json::Value::array();
  for (int64_t d : shape.asArrayRef())
    full.push(json::Value(static_cast<long long>(d)));
  json::Value spec = json::Value::object({{"group", group.str()},
                                          {"parts", json::Value(static_cast<long long>(parts.getInt()))},
                                          {"shape", std::move(full)}});
  // Tensor parallelism splits one dimension (per block); ZeRO splits flat.
  if (auto dim = shard.getAs<IntegerAttr>("dim"))
    spec.set("dim", json::Value(static_cast<long long>(dim.getInt())));
  if (auto blocks = shard.getAs<IntegerAttr>("blocks"))
    spec.set("blocks", json::Value(static_cast<long long>(blocks.getInt())));
  if (auto within = shard.getAs<DictionaryAttr>("within")) {
    auto inner = shardSpec(within, what);
    if (!inner)
      return inner.takeError();
    spec.set("within", std::move(*inner));
  }
  return spec;
}

/// The role of an argument or result from its lcc.* attributes, with how it
/// is partitioned over ranks when it is (`lcc.shard`, written by the ZeRO
/// pass): {"group", "parts", "shape" (the whole tensor's)}, so the runtime
/// can cut whole tensors and reassemble checkpoints at another world size.
static llvm::Expected<json::Value> slotFromAttrs(DictionaryAttr attrs, bool out, Type type,
                                                 llvm::StringRef what) {
  auto s = slotRole(attrs, out, type, what);
  if (!s)
    return s;
  auto shard = attrs ? attrs.getAs<DictionaryAttr>("lcc.shard") : DictionaryAttr();
  if (!shard)
    return s;
  auto spec = shardSpec(shard, what);
  if (!spec)
    return spec.takeError();
  s->set("shard", std::move(*spec));
  return s;
}

static llvm::Expected<json::Value> slotRole(DictionaryAttr attrs, bool out, Type type,
                                            llvm::StringRef what) {
  auto str = [&](const char *key) -> std::optional<std::string> {
    if (auto a = attrs ? attrs.getAs<StringAttr>(key) : StringAttr())
      return a.str();
    return std::nullopt;
  };
  if (auto n = str("lcc.param"))
    return slot("param", *n, out, type);
  if (auto n = str("lcc.opt_state"))
    return slot("state", *n, out, type);
  if (auto n = str("lcc.input"))
    return slot("input", *n, out, type);
  if (auto n = str("lcc.output"))
    return slot("output", *n, out, type);
  if (attrs && attrs.get("lcc.step"))
    return slot("step", "step", out, type);
  return error(what + " has no lcc.param/opt_state/input/output/step attribute");
}

json::Value scalarsToJson(DictionaryAttr dict) {
  json::Value out = json::Value::object();
  if (!dict)
    return out;
  for (NamedAttribute a : dict) {
    std::string key = a.getName().str();
    if (auto i = llvm::dyn_cast<IntegerAttr>(a.getValue()))
      out.set(key, i.getType().isInteger(1) ? json::Value(bool(i.getInt()))
                                            : json::Value(static_cast<long long>(i.getInt())));
    else if (auto f = llvm::dyn_cast<FloatAttr>(a.getValue()))
      out.set(key, f.getValueAsDouble());
    else if (auto str = llvm::dyn_cast<StringAttr>(a.getValue()))
      out.set(key, str.str());
  }
  return out;
}

llvm::Expected<json::Value> buildManifest(ModuleOp module, const PackageOptions &options) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  auto init = module.lookupSymbol<func::FuncOp>("init");
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!forward || !init || !step)
    return error("the module needs @init, @forward and @train_step to be packaged");

  json::Value params = json::Value::array(), inputs = json::Value::array(),
              state = json::Value::array(), functions = json::Value::object();
  std::vector<std::string> paramNames;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto attrs = forward.getArgAttrDict(i);
    auto s = slotFromAttrs(attrs, false, forward.getArgument(i).getType(),
                           "@forward argument #" + std::to_string(i));
    if (!s)
      return s.takeError();
    if (s->get("role")->asString() == "param") {
      paramNames.push_back(s->get("name")->asString());
      s->set("frozen", bool(attrs.get("lcc.frozen")));
      params.push(*s);
    } else {
      inputs.push(*s);
    }
  }

  // @init: one result per parameter, in @forward's order.
  json::Value initSlots = json::Value::array();
  if (init.getNumResults() != paramNames.size())
    return error("@init returns " + std::to_string(init.getNumResults()) + " values for " +
                 std::to_string(paramNames.size()) + " parameters");
  for (unsigned i = 0; i < init.getNumResults(); ++i) {
    auto s = slot("param", paramNames[i], true, init.getResultTypes()[i]);
    if (!s)
      return s.takeError();
    initSlots.push(*s);
  }
  functions.set("init", std::move(initSlots));

  for (func::FuncOp fn : {forward, step}) {
    json::Value slots = json::Value::array();
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto s = slotFromAttrs(fn.getArgAttrDict(i), false, fn.getArgument(i).getType(),
                             "@" + fn.getSymName().str() + " argument #" + std::to_string(i));
      if (!s)
        return s.takeError();
      if (fn == step && s->get("role")->asString() == "state")
        state.push(*s);
      slots.push(*s);
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      DictionaryAttr attrs = fn.getResultAttrDict(i);
      // @forward's one result is the loss.
      llvm::Expected<json::Value> s =
          fn == forward ? slot("output", "loss", true, fn.getResultTypes()[i])
                        : slotFromAttrs(attrs, true, fn.getResultTypes()[i],
                                        "@train_step result #" + std::to_string(i));
      if (!s)
        return s.takeError();
      slots.push(*s);
    }
    functions.set(fn.getSymName().str(), std::move(slots));
  }

  // lcc-build-generation's entries (lcc-run --generate), where the model has them.
  for (auto fn : module.getOps<func::FuncOp>()) {
    std::string name = fn.getSymName().str();
    if (!isGenerationEntry(name) || fn.isExternal())
      continue;
    json::Value slots = json::Value::array();
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto s = slotFromAttrs(fn.getArgAttrDict(i), false, fn.getArgument(i).getType(),
                             "@" + std::string(name) + " argument #" + std::to_string(i));
      if (!s)
        return s.takeError();
      slots.push(*s);
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto s = slotFromAttrs(fn.getResultAttrDict(i), true, fn.getResultTypes()[i],
                             "@" + std::string(name) + " result #" + std::to_string(i));
      if (!s)
        return s.takeError();
      slots.push(*s);
    }
    functions.set(name, std::move(slots));
  }

  json::Value config = scalarsToJson(module->getAttrOfType<DictionaryAttr>("lcc.config"));
  std::string model;
  if (auto name = module->getAttrOfType<StringAttr>("lcc.model"))
    model = name.str();

  // Process groups in the module's (sorted) order: the compiled code names a
  // group by its position in this list (runtime/dist/Collectives.h).
  json::Value groups = json::Value::array();
  // pp_ends and pp_tied_... (lcc-split-stage: the ranks holding a tied
  // parameter) are no axes of the grid but some ranks of pp.
  if (auto dict = module->getAttrOfType<DictionaryAttr>("lcc.process_groups"))
    for (NamedAttribute a : dict)
      if (auto size = llvm::dyn_cast<IntegerAttr>(a.getValue())) {
        json::Value g =
            json::Value::object({{"name", a.getName().str()},
                                 {"size", json::Value(static_cast<long long>(size.getInt()))}});
        auto pp = dict.getAs<IntegerAttr>("pp");
        if (auto members =
                pp ? lcc::pipeline::tiedGroupMembers(a.getName(), pp.getInt()) : std::nullopt) {
          g.set("of", "pp");
          json::Value list = json::Value::array();
          for (int64_t m : *members)
            list.push(json::Value(static_cast<long long>(m)));
          g.set("members", std::move(list));
        }
        groups.push(std::move(g));
      }

  json::Value manifest =
      json::Value::object({{"format", "lcc-train-bin"},
                           {"process_groups", std::move(groups)},
                           {"sharding", std::string(modeName(options.sharding))},
                           {"version", json::Value(kManifestVersion)},
                           {"model", model},
                           {"source", options.source},
                           {"seed", json::Value(static_cast<unsigned long long>(options.seed))},
                           {"config", std::move(config)},
                           {"training", options.training},
                           {"params", std::move(params)},
                           {"state", std::move(state)},
                           {"inputs", std::move(inputs)},
                           {"functions", std::move(functions)}});
  if (!options.hf.isNull())
    manifest.set("hf", options.hf);
  // Why a model has no generation entries (tools/lcc/Generation.cpp), for lcc-run's error.
  if (auto why = module->getAttrOfType<StringAttr>("lcc.no_generation"))
    manifest.set("no_generation", why.str());
  // lcc-lora's adapters, for lcc-run's PEFT export and --merge-lora.
  if (auto lora = module->getAttrOfType<DictionaryAttr>("lcc.lora")) {
    json::Value adapters = json::Value::array();
    for (auto a : lora.getAs<ArrayAttr>("adapters").getAsRange<DictionaryAttr>())
      adapters.push(
          json::Value::object({{"base", a.getAs<StringAttr>("base").str()},
                               {"a", a.getAs<StringAttr>("a").str()},
                               {"b", a.getAs<StringAttr>("b").str()},
                               {"transposed", a.getAs<BoolAttr>("transposed").getValue()}}));
    manifest.set("lora",
                 json::Value::object(
                     {{"rank", static_cast<long long>(lora.getAs<IntegerAttr>("rank").getInt())},
                      {"alpha", lora.getAs<FloatAttr>("alpha").getValueAsDouble()},
                      {"scale", lora.getAs<FloatAttr>("scale").getValueAsDouble()},
                      {"rslora", lora.getAs<BoolAttr>("rslora").getValue()},
                      {"adapters", std::move(adapters)}}));
  }
  return manifest;
}

llvm::Expected<Package> compilePackage(ModuleOp module, const PackageOptions &options) {
  auto manifest = buildManifest(module, options);
  if (!manifest)
    return manifest.takeError();
  auto code = compileCpuSharedObject(module, options.cpu);
  if (!code)
    return code.takeError();
  // Each function's arena is its last buffer.
  json::Value *functions = manifest->get("functions");
  for (auto &[name, bytes] : code->arenaBytes) {
    json::Value *slots = functions->get(name);
    if (slots && bytes > 0)
      slots->push(json::Value::object({{"role", "workspace"},
                                       {"name", "arena"},
                                       {"out", true},
                                       {"dtype", "i8"},
                                       {"shape", json::Value::array({json::Value(
                                                     static_cast<long long>(bytes))})}}));
  }
  json::Value report = json::Value::object();
  for (auto &[key, value] : code->report)
    report.set(key, json::Value(static_cast<long long>(value)));
  manifest->set("compile_report", std::move(report));
  bool cuda = options.cpu.target == "cuda";
  manifest->set("target", std::string(cuda ? "cuda" : "cpu"));
  if (cuda) {
    json::Value names = json::Value::array();
    for (const std::string &n : code->cuda.names)
      names.push(n);
    manifest->set("cuda", json::Value::object({{"arch", code->cuda.arch},
                                               {"kernels", std::move(names)}}));
  }
  Package p;
  p.cuda = std::move(code->cuda);
  p.manifest = std::move(*manifest);
  p.target = aotTargetName(options.cpu);
  p.code = std::move(code->sharedObject);
  p.phaseSeconds = std::move(code->phaseSeconds);
  return p;
}

/// The compile report's "recompute:<layer>:ops|flops|bytes" (AotCompiler),
/// one row per layer in numeric order (h.2 before h.10).
std::vector<RecomputedLayer> recomputedLayers(const json::Value &manifest) {
  std::map<std::string, RecomputedLayer> byName;
  if (const json::Value *r = manifest.get("compile_report"))
    for (const auto &[key, value] : r->members()) {
      llvm::StringRef rest = key;
      if (!rest.consume_front("recompute:") || !value.isInt())
        continue;
      auto [layer, what] = rest.rsplit(':');
      RecomputedLayer &l = byName[layer.str()];
      l.layer = layer.str();
      (what == "ops" ? l.ops : what == "flops" ? l.flops : l.bytes) = value.asInt();
    }
  std::vector<RecomputedLayer> out;
  for (auto &[name, l] : byName)
    out.push_back(l);
  llvm::sort(out, [](const RecomputedLayer &a, const RecomputedLayer &b) {
    return llvm::StringRef(a.layer).compare_numeric(b.layer) < 0;
  });
  return out;
}

std::string compileReportText(const json::Value &manifest) {
  const json::Value *r = manifest.get("compile_report");
  if (!r)
    return "";
  auto get = [&](const std::string &key) -> long long {
    const json::Value *v = r->get(key);
    return v && v->isInt() ? v->asInt() : -1;
  };
  const json::Value *target = manifest.get("target");
  bool cuda = target && target->isString() && target->asString() == "cuda";
  std::string out;
  llvm::raw_string_ostream os(out);
  const json::Value *functions = manifest.get("functions");
  bool generation = functions && functions->get("decode_step");
  os << "compile report (@init, @forward, @train_step"
     << (generation ? ", @prefill, @decode_step" : "") << "):\n"
     << "  linalg ops before fusion  " << get("linalg_ops_before_fusion") << "\n"
     << "  linalg ops after fusion   " << get("linalg_ops_after_fusion") << "   (lcc-fuse)\n"
     << "  split reductions          " << std::max(0LL, get("split_reductions"))
     << "   (whole-tensor sums in two stages, lcc-split-reductions)\n"
     << "  layer functions           " << std::max(0LL, get("layer_functions")) << ", called "
     << std::max(0LL, get("layer_calls"))
     << " times   (repeated layers bufferized once, lcc-outline-layers)\n"
     << "  kernels                   " << get("kernels")
     << (cuda ? "   (CUDA kernels, lcc-gpu-kernels)\n" : "   (loop nests, lcc-outline-kernels)\n");
  if (cuda)
    for (const auto &[mode, mapping] : ModeNames<GpuMapping>::table)
      os << "    " << llvm::left_justify(mapping, 22)
         << std::max(0LL, get("gpu_kernels_" + std::string(mapping))) << "\n";
  os << "  GEMM library calls        " << get("gemm_calls")
     << (cuda ? "   (cuBLASLt, lcc-gemm-to-library)\n" : "   (OpenBLAS, lcc-gemm-to-library)\n")
     << "    overwriting C (beta 0)  " << std::max(0LL, get("gemm_overwrites"))
     << "   (no zero fill before them)\n";
  std::vector<RecomputedLayer> layers = recomputedLayers(manifest);
  if (!layers.empty()) {
    RecomputedLayer all;
    for (const RecomputedLayer &l : layers) {
      all.ops += l.ops;
      all.flops += l.flops;
      all.bytes += l.bytes;
    }
    os << "  recomputed                " << all.ops << " ops, " << all.flops
       << " FLOPs per micro-batch, forward values of " << all.bytes
       << " B no longer kept   (lcc-recompute)\n";
    for (const RecomputedLayer &l : layers)
      os << "    " << llvm::left_justify(l.layer, 22) << l.ops << " ops, " << l.flops << " FLOPs, "
         << l.bytes << " B\n";
  }
  return out;
}

int64_t recomputedFlops(const json::Value &manifest) {
  int64_t flops = 0;
  for (const RecomputedLayer &l : recomputedLayers(manifest))
    flops += l.flops;
  return flops;
}

llvm::Error writePackage(const std::vector<Package> &packages, const std::string &path) {
  if (packages.empty())
    return error("nothing to write");
  TrainBinWriter writer;
  Status st;
  for (const Package &package : packages) {
    std::string suffix = package.world ? ".w" + std::to_string(package.world) : "";
    if (package.stage >= 0)
      suffix += ".s" + std::to_string(package.stage);
    std::string text = json::serialize(package.manifest, 1);
    if (st)
      st = writer.addSection("manifest" + suffix, "any", -1,
                             reinterpret_cast<const uint8_t *>(text.data()), text.size());
    bool cuda = !package.cuda.names.empty();
    if (st)
      st = writer.addSection((cuda ? "cuda.host" : "code") + suffix, package.target, -1,
                             package.code.data(), package.code.size());
    // An emulated target's kernels are in its host code.
    bool device = cuda && package.cuda.arch != "emulated";
    if (st && device)
      st = writer.addSection("cuda.cubin" + suffix, "cuda-" + package.cuda.arch, -1,
                             package.cuda.cubin.data(), package.cuda.cubin.size());
    if (st && device)
      st = writer.addSection("cuda.ptx" + suffix, "cuda-ptx", -1,
                             reinterpret_cast<const uint8_t *>(package.cuda.ptx.data()),
                             package.cuda.ptx.size());
  }
  const Package &first = packages.front();
  if (st && !first.initParams.empty())
    st = writer.addSection("params", "any", -1, first.initParams.data(), first.initParams.size());
  if (st && !first.onnxModel.empty())
    st = writer.addSection("onnx", "any", -1, first.onnxModel.data(), first.onnxModel.size());
  if (st)
    st = writer.write(path);
  if (!st)
    return error(st.message());
  return llvm::Error::success();
}

} // namespace lcc
