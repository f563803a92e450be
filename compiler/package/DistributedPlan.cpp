//===- DistributedPlan.cpp - per-rank model states and traffic ------------===//
#include "compiler/package/DistributedPlan.h"
#include "runtime/support/Format.h"

#include "dialects/lcc/LccOps.h"
#include "passes/pipeline/PipelineStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace lcc {

namespace {

int64_t elementBytes(RankedTensorType t) {
  return std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

/// Elements of the whole tensor an argument holds (a part or all of).
/// Elements of the tensor an lcc.shard attribute cuts (its "shape"), or
/// `otherwise` when it has none.
int64_t shapeElements(DictionaryAttr shard, int64_t otherwise) {
  auto shape = shard ? shard.getAs<DenseI64ArrayAttr>("shape") : DenseI64ArrayAttr();
  if (!shape)
    return otherwise;
  int64_t n = 1;
  for (int64_t d : shape.asArrayRef())
    n *= d;
  return n;
}

int64_t wholeElements(func::FuncOp fn, unsigned arg) {
  auto shard = fn.getArgAttrOfType<DictionaryAttr>(arg, "lcc.shard");
  if (auto within = shard ? shard.getAs<DictionaryAttr>("within") : DictionaryAttr())
    shard = within; // a ZeRO part of a tensor-parallel piece
  return shapeElements(
      shard, llvm::cast<RankedTensorType>(fn.getArgument(arg).getType()).getNumElements());
}

/// Size of `group` from the module's lcc.process_groups (1 when absent).
int64_t groupSize(Operation *op, StringRef group) {
  if (DictionaryAttr groups = processGroups(op))
    if (auto size = groups.getAs<IntegerAttr>(group))
      return size.getInt();
  return 1;
}

std::string human(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

} // namespace

DistributedPlan planDistributed(ModuleOp module, ShardMode mode, int64_t world,
                                Precision precision) {
  DistributedPlan p;
  p.mode = mode;
  p.world = world;
  p.precision = precision;
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return p;
  if (auto groups = module->getAttrOfType<DictionaryAttr>("lcc.process_groups"))
    for (NamedAttribute g : groups)
      // pp_ends, pp_tied_... are some ranks of pp (lcc-split-stage), not
      // axes of the grid.
      if (auto size = llvm::dyn_cast<IntegerAttr>(g.getValue());
          size && !lcc::pipeline::tiedGroupMembers(g.getName(), groupSize(step, "pp")))
        p.groups += (p.groups.empty() ? "" : " x ") + g.getName().str() + "=" +
                    std::to_string(size.getInt());
  bool mixed = precision != Precision::FP32;
  bool gradsPartitioned = mode == ShardMode::Zero2 || mode == ShardMode::Zero3;
  bool statePartitioned = gradsPartitioned || mode == ShardMode::Zero1;
  // ZeRO partitions over the data-parallel ranks: world / tp on a grid.
  int64_t dp = std::max<int64_t>(1, world / groupSize(step, "tp"));
  auto part = [&](int64_t n, bool partitioned) {
    return partitioned ? (n + dp - 1) / dp : n;
  };
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto type = llvm::cast<RankedTensorType>(step.getArgument(i).getType());
    if (!step.getArgAttr(i, "lcc.param"))
      continue;
    int64_t local = type.getNumElements(), whole = wholeElements(step, i);
    int64_t bytes = mixed ? 2 : elementBytes(type);
    if (step.getArgAttr(i, "lcc.frozen")) {
      p.frozenBytes += local * bytes;
      continue;
    }
    // What each data-parallel rank holds before ZeRO partitions it: the
    // tensor-parallel piece of a parameter split over "tp" (the shape of a
    // ZeRO part's attribute when it has a `within`), the whole tensor
    // otherwise.
    auto shard = step.getArgAttrOfType<DictionaryAttr>(i, "lcc.shard");
    auto group = shard ? shard.getAs<StringAttr>("group") : StringAttr();
    int64_t replica = group && group.getValue() == "tp" ? local
                      : shard && shard.get("within") ? shapeElements(shard, whole)
                                                      : whole;
    p.parameters += whole;
    p.paramBytes += local * bytes;
    p.gradBytes += part(replica, gradsPartitioned) * bytes;
    // Mixed precision: K = 12 bytes per parameter (fp32 master copy,
    // momentum, variance), partitioned like the optimizer state.
    if (mixed)
      p.stateBytes += part(replica, statePartitioned) * 12;
  }
  if (!mixed)
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      if (step.getArgAttr(i, "lcc.opt_state")) {
        auto type = llvm::cast<RankedTensorType>(step.getArgument(i).getType());
        p.stateBytes += type.getNumElements() * elementBytes(type);
      }

  // Traffic of one step, per rank, with ring algorithms: an all_reduce of S
  // bytes sends 2 (N-1)/N S, a reduce_scatter of an S-byte input or an
  // all_gather of an S-byte result (N-1)/N S. In elements the paper counts
  // 2 Psi for an all_reduce of everything, Psi for a reduce_scatter or an
  // all_gather of everything.
  double sent = 0, volume = 0;
  step.walk([&](Operation *op) {
    RankedTensorType t;
    double factor = 0, perElement = 0;
    StringRef group;
    if (auto ar = llvm::dyn_cast<AllReduceOp>(op)) {
      t = ar.getType(), group = ar.getGroup(), perElement = 2;
    } else if (auto rs = llvm::dyn_cast<ReduceScatterOp>(op)) {
      t = rs.getInput().getType(), group = rs.getGroup(), perElement = 1;
    } else if (auto ag = llvm::dyn_cast<AllGatherOp>(op)) {
      t = ag.getType(), group = ag.getGroup(), perElement = 1;
    } else {
      return;
    }
    int64_t n = groupSize(op, group);
    factor = perElement * double(n - 1) / double(n);
    int64_t bytes = mixed && t.getNumElements() > 1 ? 2 : elementBytes(t);
    sent += factor * double(t.getNumElements() * bytes);
    volume += perElement * double(t.getNumElements());
    ++p.collectives;
  });
  p.sentBytes = int64_t(sent + 0.5);
  p.volumeInPsi = p.parameters ? volume / double(p.parameters) : 0;
  return p;
}

std::string distributedPlanReport(const DistributedPlan &p) {
  std::string out;
  llvm::raw_string_ostream os(out);
  bool mixed = p.precision != Precision::FP32;
  os << "distributed plan: --shard=" << modeName(p.mode) << ", " << p.world << " rank"
     << (p.world == 1 ? "" : "s") << (p.groups.empty() ? "" : " (" + p.groups + ")") << ", "
     << (mixed ? std::string(modeName(p.precision)) +
                     " mixed precision (ZeRO paper: 2 + 2 + K=12 bytes per parameter)"
               : std::string("fp32 (4 + 4 + K=8 bytes per parameter: AdamW's m and v)"))
     << "\n";
  os << "  trainable parameters (Psi)  " << withCommas(p.parameters) << "\n";
  auto row = [&](const char *what, int64_t bytes) {
    os << llvm::format("  %-26s %22s B  %12s per rank\n", what, withCommas(bytes).c_str(),
                       human(bytes).c_str());
  };
  row("parameters", p.paramBytes);
  row("gradients", p.gradBytes);
  row("optimizer state", p.stateBytes);
  if (p.frozenBytes)
    row("frozen parameters", p.frozenBytes);
  row("model states", p.paramBytes + p.gradBytes + p.stateBytes + p.frozenBytes);
  os << llvm::format("  communication per step     %22s B  %12s sent per rank, %.2f Psi "
                     "elements, %lld collectives\n",
                     withCommas(p.sentBytes).c_str(), human(p.sentBytes).c_str(), p.volumeInPsi,
                     static_cast<long long>(p.collectives));
  return out;
}

} // namespace lcc
