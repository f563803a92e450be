//===- PlannerProbe.cpp - what the planner measures of a compiled probe ---===//
#include "compiler/package/PlannerProbe.h"

#include "dialects/lcc/LccOps.h"
#include "passes/PassBase.h"
#include "runtime/cpu/CpuProgram.h"

using namespace mlir;

namespace lcc::planner {

/// Ops lcc-fuse makes one kernel with their elementwise neighbours (or
/// that are views): a chain of them reads its inputs and writes its
/// outputs once, not once per op.
static bool fusible(Operation *op) {
  return op && isa<NegOp, ExpOp, LogOp, TanhOp, ErfOp, SqrtOp, RsqrtOp, ReluOp, SigmoidOp, SiluOp,
                   GeluOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CmpOp, WhereOp,
                   ConvertOp, StopGradientOp, ReshapeOp, BroadcastToOp, TransposeOp, SliceOp,
                   FillOp, IotaOp, ConstantOp, CausalMaskOp, ParallelCopyOp, GradientOp>(op);
}

/// The bytes a fused execution of `op` moves: what the default cost counts
/// (each operand read, each result written), less, for an op of a fused
/// chain, the operands its chain made and the results only its chain reads.
static double fusedBytes(Operation *op, CostOpInterface cost) {
  if (!fusible(op))
    return double(cost.getBytesAccessed());
  double bytes = 0;
  for (Value v : op->getOperands())
    if (!fusible(v.getDefiningOp()))
      bytes += double(staticBytes(v.getType()));
  for (Value v : op->getResults())
    if (llvm::any_of(v.getUsers(), [](Operation *user) { return !fusible(user); }))
      bytes += double(staticBytes(v.getType()));
  return bytes;
}

FunctionCost functionCost(func::FuncOp fn, const Cluster &cluster, int64_t groupSize) {
  FunctionCost cost;
  if (!fn)
    return cost;
  Link link = groupLink(cluster, groupSize, 1);
  double n = double(groupSize), share = groupSize > 1 ? (n - 1) / n : 0;
  fn.walk([&](Operation *op) {
    // A collective's bytes: the whole tensor (an all-gather's result).
    auto collective = [&](Collective kind, Type whole, double sends) {
      double bytes = double(staticBytes(whole));
      cost.seconds += collectiveSeconds(kind, groupSize, bytes, link);
      cost.sentBytes += sends * share * bytes;
    };
    if (auto ar = dyn_cast<AllReduceOp>(op))
      return collective(Collective::AllReduce, ar.getInput().getType(), 2);
    if (auto ag = dyn_cast<AllGatherOp>(op))
      return collective(Collective::AllGather, ag.getType(), 1);
    if (auto rs = dyn_cast<ReduceScatterOp>(op))
      return collective(Collective::ReduceScatter, rs.getInput().getType(), 1);
    if (isa<WaitOp>(op))
      return;
    if (auto c = dyn_cast<CostOpInterface>(op)) {
      double flops = double(c.getFlops());
      cost.flops += flops;
      cost.seconds += rooflineSeconds(cluster, flops, fusedBytes(op, c));
    }
  });
  return cost;
}

/// The bytes of the forward values of named layers that the backward
/// reads: what a pipeline keeps per micro-batch in flight. lcc-autodiff
/// clones @forward's ops first into @forward_grad, so its first ops (as
/// many as @forward has) are the forward and the rest the backward.
static double keptBytes(func::FuncOp forward, func::FuncOp grad) {
  Block &body = grad.getBody().front();
  size_t numForward = forward.getBody().front().getOperations().size() - 1;
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, op] : llvm::enumerate(body.without_terminator()))
    index[&op] = i;
  double kept = 0;
  for (auto [i, op] : llvm::enumerate(body.without_terminator())) {
    if (i >= numForward)
      break;
    if (!layerOf(op.getLoc()))
      continue;
    for (Value v : op.getResults())
      if (llvm::any_of(v.getUsers(), [&](Operation *user) {
            Operation *top = body.findAncestorOpInBlock(*user);
            return top && index.lookup(top) >= numForward;
          }))
        kept += double(staticBytes(v.getType()));
  }
  return kept;
}

llvm::Expected<Measurement> measureProbe(ModuleOp module, const Cluster &cluster, int64_t tp,
                                         double streamBytes, bool plan, PackageOptions options) {
  Measurement m;
  auto fn = [&](llvm::StringRef name) { return module.lookupSymbol<func::FuncOp>(name); };
  if (!fn("forward") || !fn("forward_grad") || !fn("train_step"))
    return llvm::createStringError("the probe has no @forward, @forward_grad or @train_step");
  FunctionCost forward = functionCost(fn("forward"), cluster, tp),
               both = functionCost(fn("forward_grad"), cluster, tp),
               step = functionCost(fn("train_step"), cluster, tp);
  m.forwardSeconds = forward.seconds;
  m.forwardGradSeconds = both.seconds;
  m.stepSeconds = step.seconds;
  m.forwardFlops = forward.flops;
  m.tpBytes = both.sentBytes;
  m.streamBytes = streamBytes;
  m.keptBytes = keptBytes(fn("forward"), fn("forward_grad"));
  // The model states from the step's own buffers, without compiling.
  auto manifest = buildManifest(module, options);
  if (!manifest)
    return manifest.takeError();
  MemoryPlanLines lines;
  if (!memoryPlanLines(*manifest, lines))
    return llvm::createStringError("the probe's manifest has no memory plan");
  m.params = lines.params + lines.frozen;
  m.state = lines.state;
  if (!plan)
    return m;
  options.cpu.planOnly = true;
  auto package = compilePackage(module, options);
  if (!package)
    return package.takeError();
  if (!memoryPlanLines(package->manifest, lines))
    return llvm::createStringError("the probe's manifest has no memory plan");
  m.io = lines.io;
  for (auto &[name, bytes] : lines.arenas)
    m.arena += (bytes + 63) / 64 * 64;
  return m;
}

} // namespace lcc::planner
